//go:build unix

package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readSoon reads path, failing the test instead of hanging if Read blocks.
func readSoon(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	type res struct {
		data []byte
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		d, err := Read(path)
		ch <- res{d, err}
	}()
	select {
	case r := <-ch:
		return r.data, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("Read(%s) blocked", path)
		return nil, nil
	}
}

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "wf.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "is a named pipe (FIFO), not a regular file"},
		{zero, "is a device, not a regular file"},
		{dir, "is a directory, not a regular file"},
		{big, "is larger than 4 MiB"},
		{filepath.Join(dir, "nope.yaml"), "no such file"},
	} {
		_, err := readSoon(t, c.path)
		var se *Error
		if !errors.As(err, &se) || se.Path != c.path || !strings.HasPrefix(err.Error(), c.path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%s) = %v, want %q naming the file", c.path, err, c.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "nope.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file is not ErrNotExist: %v", err)
	}
}

func TestReadFollowsSymlinksToRegularFiles(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(real, []byte("id: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(link); err != nil || string(data) != "id: x\n" {
		t.Errorf("Read(link) = %q, %v", data, err)
	}
}

func TestAliasOffset(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int // offset of the "*", -1 for none
	}{
		{"id: *nope\n", 4},
		{"# *nope in a comment\nid: '*nope'\nx: *nope\n", strings.Index("# *nope in a comment\nid: '*nope'\nx: *nope\n", "x: *") + 3},
		{"a: [1, *nope]\n", 7},
		{"a: |\n  *nope\nb: *nope\n", strings.LastIndex("a: |\n  *nope\nb: *nope\n", "*")},
		{"a: *nopeless\n", -1},
	} {
		if got := AliasOffset([]byte(c.src), "nope"); got != c.want {
			t.Errorf("AliasOffset(%q) = %d, want %d", c.src, got, c.want)
		}
	}
}
