package state

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestSecureDirsTightensOpenFolders(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir())
	dirs := []string{m.Root(), m.sessionsDir(), m.logsDir()}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := m.SecureDirs(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", d, fi.Mode().Perm(), err)
		}
	}
}

func TestSecureDirsCreatesMissingFolders(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir())
	if err := m.SecureDirs(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{m.Root(), m.sessionsDir(), m.logsDir()} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v, %v; want a private folder", d, fi, err)
		}
	}
}

// Not parallel: it replaces chmod.
func TestSecureDirsNamesWhatItCannotTighten(t *testing.T) {
	m := NewManager(t.TempDir())
	if err := os.MkdirAll(m.sessionsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(m.Root(), 0o755); err != nil {
		t.Fatal(err)
	}
	chmod = func(name string, _ os.FileMode) error {
		return &os.PathError{Op: "chmod", Path: name, Err: syscall.EPERM}
	}
	defer func() { chmod = os.Chmod }()
	err := m.SecureDirs()
	if err == nil {
		t.Fatal("no warning for a folder left open")
	}
	msg := err.Error()
	if !strings.Contains(msg, m.Root()+" is mode 0755") || !errors.Is(err, syscall.EPERM) {
		t.Errorf("warning %q does not name the folder, its mode and why", msg)
	}
	if strings.Contains(msg, m.sessionsDir()) || strings.Count(msg, "chmod") != 0 {
		t.Errorf("warning %q names more than the open folder, or repeats the path", msg)
	}
}
