package state

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
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

// A short log makes no file while the output is whole in the tail, and
// one as soon as it is not, or once it has an earlier attempt's file.
func TestShortTaskLog(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, out string
		file      bool
	}{
		{"nothing", "", false},
		{"lines", "one\ntwo\n", false},
		{"unterminated", "one\ntwo", false},
		{"blank lines", "\n\n", false},
		{"more lines than the tail", "1\n2\n3\n4\n", true},
		{"more lines than a failure shows", strings.Repeat("line\n", shortLines+1), true},
		{"a progress bar the tail overwrote", "10%\r100%\n", true},
		{"a line longer than the tail keeps", strings.Repeat("x", maxTailLineBytes+1) + "\n", true},
	} {
		path := filepath.Join(dir, "logs", strings.ReplaceAll(tc.name, " ", "-")+".log")
		tail := 3
		if strings.Contains(tc.name, "failure") {
			tail = 20
		}
		l, err := OpenShortTaskLog(path, tail)
		if err != nil {
			t.Fatal(err)
		}
		l.Write([]byte(tc.out))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		switch {
		case tc.file && (err != nil || string(data) != tc.out || l.Path() != path):
			t.Errorf("%s: file %q (%v), path %q; want the output in %s", tc.name, data, err, l.Path(), path)
		case !tc.file && (err == nil || l.Path() != ""):
			t.Errorf("%s: file %q, path %q; want none (the tail %q holds it)", tc.name, data, l.Path(), l.Tail())
		}
	}

	// An earlier attempt's file, by an earlier vibeteam (a resume): appended
	// to, whatever the output.
	path := filepath.Join(dir, "earlier", "lines.log")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("first attempt\n"), 0o600)
	l, _ := OpenShortTaskLog(path, 3)
	l.Write([]byte("again\n"))
	l.Close()
	if data, _ := os.ReadFile(path); string(data) != "first attempt\nagain\n" || l.Path() != path {
		t.Errorf("resumed: file %q, path %q", data, l.Path())
	}
	// An earlier attempt's file in this run (a retry), in a directory this
	// process made: appended to as well.
	path = filepath.Join(dir, "logs", "retried.log")
	l, _ = OpenShortTaskLog(path, 3)
	l.Write([]byte("1\n2\n3\n4\n"))
	l.Close()
	l, _ = OpenShortTaskLog(path, 3)
	l.Write([]byte("again\n"))
	l.Close()
	if data, _ := os.ReadFile(path); string(data) != "1\n2\n3\n4\nagain\n" || l.Path() != path {
		t.Errorf("retried: file %q, path %q", data, l.Path())
	}
}

// A task that runs on gets its file while it runs, to be followed.
func TestShortTaskLogFollowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "logs", "long.log")
		l, err := OpenShortTaskLog(path, 3)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		l.Write([]byte("started\n"))
		time.Sleep(followAfter + time.Millisecond)
		synctest.Wait()
		l.mu.Lock()
		opened := l.opened
		l.mu.Unlock()
		if opened == nil {
			t.Fatalf("no file after %s", followAfter)
		}
		<-opened
		l.Write([]byte("more\n"))
		l.mu.Lock()
		l.w.Flush()
		l.mu.Unlock()
		if data, _ := os.ReadFile(path); string(data) != "started\nmore\n" {
			t.Errorf("file holds %q", data)
		}
	})
}
