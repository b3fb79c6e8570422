package state

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func openTaskLog(t *testing.T, tail int) (*TaskLog, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "logs", "id", "task.log")
	l, err := OpenTaskLog(path, tail)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

func TestTaskLogFileAndTail(t *testing.T) {
	l, path := openTaskLog(t, 3)
	checkMode(t, filepath.Dir(path), 0o700)
	chunks := []string{"one\ntw", "o\nthr", "ee\r", "\nfour\n", "fi"}
	for _, c := range chunks {
		if n, err := l.Write([]byte(c)); err != nil || n != len(c) {
			t.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
	if got, want := l.Tail(), []string{"three", "four", "fi"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tail %q, want %q", got, want)
	}
	l.Write([]byte("ve\n"))
	if got, want := l.Tail(), []string{"three", "four", "five"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tail %q, want %q", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, 0o600)
	if _, err := l.Write([]byte("x")); err == nil {
		t.Error("write after close succeeded")
	}
	if got := l.Tail(); len(got) != 3 {
		t.Errorf("tail lost after close: %q", got)
	}
	data, _ := os.ReadFile(path)
	if string(data) != strings.Join(chunks, "")+"ve\n" {
		t.Errorf("file holds %q", data)
	}

	// Reopening appends instead of truncating.
	l2, err := OpenTaskLog(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	l2.Write([]byte("again\n"))
	l2.Close()
	data, _ = os.ReadFile(path)
	if !strings.HasPrefix(string(data), "one\n") || !strings.HasSuffix(string(data), "five\nagain\n") {
		t.Errorf("reopen: file holds %q", data)
	}
}

func TestTaskLogCarriageReturn(t *testing.T) {
	l, _ := openTaskLog(t, 5)
	l.Write([]byte("progress 10%\rprogress 50%\r"))
	if got := l.Tail(); !reflect.DeepEqual(got, []string{"progress 50%"}) {
		t.Errorf("mid-progress tail %q", got)
	}
	l.Write([]byte("progress 100%\r\ndone\r\n"))
	if got, want := l.Tail(), []string{"progress 100%", "done"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tail %q, want %q", got, want)
	}
	l.Write([]byte("\n\n"))
	if got, want := l.Tail(), []string{"progress 100%", "done", "", ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("blank lines: tail %q, want %q", got, want)
	}
}

func TestTaskLogBounded(t *testing.T) {
	l, _ := openTaskLog(t, 4)
	for i := range 10000 {
		fmt.Fprintf(l, "line %d\n", i)
	}
	if got, want := l.Tail(), []string{"line 9996", "line 9997", "line 9998", "line 9999"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tail %q, want %q", got, want)
	}
	if len(l.ring) != 4 {
		t.Errorf("ring holds %d lines", len(l.ring))
	}

	// One enormous line without a newline, ending in a multi-byte rune cut
	// by the cap.
	long := strings.Repeat("é", 3*maxTailLineBytes)
	l.Write([]byte(long))
	tail := l.Tail()
	last := tail[len(tail)-1]
	if len(last) > maxTailLineBytes+len("…") || !strings.HasSuffix(last, "…") || !utf8.ValidString(last) {
		t.Errorf("long line kept as %d bytes, suffix %q", len(last), last[len(last)-8:])
	}
	if cap(l.partial) > 2*maxTailLineBytes {
		t.Errorf("partial buffer grew to %d", cap(l.partial))
	}
}

func TestTaskLogNoTail(t *testing.T) {
	l, path := openTaskLog(t, 0)
	l.Write([]byte("a\nb\n"))
	if got := l.Tail(); got != nil {
		t.Errorf("tail %q with tailLines 0", got)
	}
	l.Close() // the file is buffered; Close flushes
	if data, _ := os.ReadFile(path); string(data) != "a\nb\n" {
		t.Errorf("file holds %q", data)
	}
}

func TestTaskLogConcurrent(t *testing.T) {
	l, path := openTaskLog(t, 10)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(l, "w%d-%d\n", w, i)
				l.Tail()
			}
		}()
	}
	wg.Wait()
	if got := l.Tail(); len(got) != 10 {
		t.Errorf("tail %q", got)
	}
	l.Close()
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != 800 {
		t.Errorf("%d lines in file", n)
	}
}

// The file is opened aside from the task's start: what the task writes
// before it is open is not lost, and an error opening it is Close's.
func TestTaskLogOpenedAside(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenTaskLog(filepath.Join(dir, "logs", "task.log"), 2)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", earlyLimit+10) // more than waits for the file
	for _, p := range []string{"first\n", big, "\nlast\n"} {
		if _, err := l.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "logs", "task.log")); string(data) != "first\n"+big+"\nlast\n" {
		t.Errorf("file holds %d bytes, want %d", len(data), len(big)+12)
	}

	// A directory where the file should be: the open fails, aside.
	if err := os.Mkdir(filepath.Join(dir, "logs", "dir.log"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err = OpenTaskLog(filepath.Join(dir, "logs", "dir.log"), 2)
	if err != nil {
		t.Fatal(err)
	}
	l.Write([]byte("lost\n"))
	if err := l.Close(); err == nil || !strings.Contains(err.Error(), "open task log") {
		t.Errorf("Close = %v, want the open's error", err)
	}
	if got := l.Tail(); !reflect.DeepEqual(got, []string{"lost"}) {
		t.Errorf("tail %q", got)
	}

	// A file where the directory should be: that error is OpenTaskLog's.
	if _, err := OpenTaskLog(filepath.Join(dir, "logs", "task.log", "x.log"), 2); err == nil {
		t.Error("OpenTaskLog under a file succeeded")
	}
}
