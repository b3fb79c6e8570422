//go:build unix

package adapters

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/internal/source"
)

// A FIFO, a link to /dev/zero or a huge file among the adapter files is
// broken, at once and without reading it: the other files still load.
func TestLoadDirSpecialFilesAreBrokenNotBlocking(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "big.yaml", "command: x\n"+strings.Repeat("#", source.MaxSize))
	writeFile(t, dir, "good.yaml", "command: good\nmodes: { headless: {} }\n")
	r := NewRegistry()
	done := make(chan error, 1)
	go func() { done <- r.LoadDir(dir) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadDir blocked on a special file")
	}
	if !r.Has("good") {
		t.Error("the good file was not loaded")
	}
	want := map[string]string{
		"big":  "is larger than 4 MiB",
		"fifo": "is a named pipe (FIFO), not a regular file",
		"zero": "is a device, not a regular file",
	}
	broken := r.BrokenFiles()
	if len(broken) != len(want) {
		t.Fatalf("broken: %+v", broken)
	}
	for _, b := range broken {
		if w := want[b.Name]; w == "" || !strings.HasPrefix(b.Err.Error(), b.File+": ") || !strings.Contains(b.Err.Error(), w) {
			t.Errorf("%s: %v, want %q naming the file", b.Name, b.Err, w)
		}
	}
}

func TestUndefinedAliasIsPlaced(t *testing.T) {
	_, err := parseDefinition("x.yaml", []byte("# not *nope\ncommand: tool\nmodes:\n  headless: { args: [*nope] }\n"))
	if err == nil || err.Error() != "x.yaml:4:22: invalid YAML: unknown anchor 'nope' referenced" {
		t.Errorf("err = %v", err)
	}
}

func TestCheckLaunch(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "tool.yaml", `command: tool
modes:
  interactive: { prompt: { position: none } }
  headless: { prompt: { flag: --message } }
`)
	writeFile(t, dir, "bad.yaml", "command: x\nmodes: { headless: { prompt: { position: none, required: true } } }\n")
	r := NewRegistry()
	if err := r.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		adapter, mode, prompt, want string
	}{
		{"shell", "headless", "echo hi", ""},
		{"shell", "interactive", "", "adapter \"shell\" needs a prompt in interactive mode (it runs `sh -c -- PROMPT`)"},
		{"shell", "headless", "", "adapter \"shell\" needs a prompt in headless mode"},
		{"claude", "interactive", "", ""},
		{"tool", "interactive", "hi", "adapter tool does not take a prompt in mode interactive"},
		{"tool", "headless", "-rf", `starts with "-"`},
		{"tool", "sideways", "x", `adapter "tool" has no sideways mode`},
		{"nosuch", "headless", "x", `unknown adapter "nosuch"`},
	} {
		err := r.CheckLaunch(c.adapter, c.mode, c.prompt, nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s %q: %v", c.adapter, c.mode, c.prompt, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %s %q: %v, want %q", c.adapter, c.mode, c.prompt, err, c.want)
		}
	}
	if b := r.BrokenFiles(); len(b) != 1 || !strings.Contains(b[0].Err.Error(), "required: contradicts position: none") {
		t.Errorf("required with position none: %+v", b)
	}
}

func TestCheckCommand(t *testing.T) {
	bin := t.TempDir()
	writeFile(t, bin, "agent", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(bin, "agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, bin, "plain", "not executable")
	t.Setenv("PATH", bin)
	dir := t.TempDir()
	writeFile(t, dir, "onpath.yaml", "command: agent\nmodes: { headless: {} }\n")
	writeFile(t, dir, "ghost.yaml", "command: no-such-agent-anywhere\nmodes: { headless: {} }\n")
	writeFile(t, dir, "rel.yaml", "command: ./agent\nmodes: { headless: {} }\n")
	writeFile(t, dir, "plain.yaml", "command: "+filepath.Join(bin, "plain")+"\nmodes: { headless: {} }\n")
	r := NewRegistry()
	if err := r.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ adapter, dir, want string }{
		{"onpath", dir, ""},
		{"ghost", dir, `command "no-such-agent-anywhere" of adapter "ghost" is not installed (not found on PATH)`},
		{"rel", bin, ""}, // relative to the task's directory, as os/exec takes it
		{"rel", dir, "does not exist"},
		{"plain", dir, "is not an executable file"},
	} {
		err := r.CheckCommand(c.adapter, c.dir)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s in %s: %v", c.adapter, c.dir, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s in %s: %v, want %q", c.adapter, c.dir, err, c.want)
		}
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "aider.yaml", "command: aider\ndescription: d\nmodes: { headless: {} }\n")
	info, err := ParseFile(f)
	if err != nil || info.Name != "aider" || info.Command != "aider" || info.Source != f {
		t.Errorf("ParseFile = %+v, %v", info, err)
	}
	f = writeFile(t, dir, "bad.yaml", "command: aider\nmodes: { headless: { usePTY: maybe } }\n")
	if _, err := ParseFile(f); err == nil || !strings.HasPrefix(err.Error(), f+":2:") {
		t.Errorf("ParseFile(bad) = %v", err)
	}
}
