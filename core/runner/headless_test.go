package runner

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestHeadlessDeliversOutputAndResult runs processes on pipes both ways
// they are watched (one poll of the output and the pidfd, where Linux has
// them; a goroutine per stream and one for the wait elsewhere): every byte
// of each stream arrives, named by its stream, and the result is the
// process's exit.
func TestHeadlessDeliversOutputAndResult(t *testing.T) {
	// Not parallel: it swaps how processes are watched, for the whole
	// package, while it runs.
	watchers := map[string]func() bool{"poll": pidfdWatch, "goroutines": func() bool { return false }}
	defer func(w func() bool) { pidfdWatch = w }(pidfdWatch)
	for name, watcher := range watchers {
		if name == "poll" && !watcher() {
			continue
		}
		pidfdWatch = watcher
		t.Run(name, func(t *testing.T) {
			cases := []struct {
				name   string
				spec   Spec
				input  string
				want   map[string]int
				result Result
			}{
				{name: "streams", spec: Spec{Command: "sh", Args: []string{"-c", "head -c 1048576 /dev/zero; head -c 300000 /dev/zero >&2; exit 3"}, NoInput: true},
					want: map[string]int{"stdout": 1048576, "stderr": 300000}, result: Result{ExitCode: 3}},
				{name: "merged", spec: Spec{Command: "sh", Args: []string{"-c", "head -c 70000 /dev/zero; echo err >&2"}, NoInput: true, MergeOutput: true},
					want: map[string]int{"output": 70004}, result: Result{ExitCode: 0}},
				{name: "input", spec: Spec{Command: "cat", MergeOutput: true}, input: "hello\n",
					want: map[string]int{"output": 6}, result: Result{ExitCode: 0}},
				{name: "signal", spec: Spec{Command: "sh", Args: []string{"-c", "echo bye; kill -9 $$"}, NoInput: true},
					want: map[string]int{"stdout": 4}, result: Result{ExitCode: -1, Signal: "killed"}},
			}
			for _, c := range cases {
				var mu sync.Mutex
				got := map[string]int{}
				p, err := StartHeadless(c.spec, func(ch Chunk) {
					mu.Lock()
					got[ch.Stream] += len(ch.Raw)
					mu.Unlock()
				})
				if err != nil {
					t.Fatal(err)
				}
				if c.input != "" {
					if err := p.Send(c.input); err != nil {
						t.Fatal(err)
					}
					if err := p.CloseInput(); err != nil {
						t.Fatal(err)
					}
				}
				waitDone(t, p)
				mu.Lock()
				for stream, n := range c.want {
					if got[stream] != n {
						t.Errorf("%s: %s got %d bytes, want %d (all: %v)", c.name, stream, got[stream], n, got)
					}
				}
				if len(got) != len(c.want) {
					t.Errorf("%s: streams %v, want %v", c.name, got, c.want)
				}
				mu.Unlock()
				if r := p.Result(); r != c.result {
					t.Errorf("%s: result %+v, want %+v", c.name, r, c.result)
				}
				if p.Pid() <= 0 {
					t.Errorf("%s: pid %d after the end", c.name, p.Pid())
				}
			}
		})
	}
}

// TestStartFindsAMovedCommand: a command is looked up in PATH once, and
// looked up again when the start fails because it is no longer where it
// was found.
func TestStartFindsAMovedCommand(t *testing.T) {
	// Not parallel: it sets PATH for the process, and swaps how processes
	// are watched.
	defer func(w func() bool) { pidfdWatch = w }(pidfdWatch)
	for name, watcher := range map[string]func() bool{"poll": pidfdWatch, "goroutines": func() bool { return false }} {
		pidfdWatch = watcher
		t.Run(name, testStartFindsAMovedCommand)
	}
}

func testStartFindsAMovedCommand(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t.Setenv("PATH", a+":"+b+":"+os.Getenv("PATH"))
	tool := func(dir, says string) {
		if err := os.WriteFile(filepath.Join(dir, "vibeteam-moved-tool"), []byte("#!/bin/sh\necho "+says+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func() (string, error) {
		var out strings.Builder
		var mu sync.Mutex
		p, err := StartHeadless(Spec{Command: "vibeteam-moved-tool", NoInput: true, MergeOutput: true}, func(c Chunk) {
			mu.Lock()
			out.Write(c.Raw)
			mu.Unlock()
		})
		if err != nil {
			return "", err
		}
		waitDone(t, p)
		mu.Lock()
		defer mu.Unlock()
		return out.String(), nil
	}
	tool(b, "b")
	if got, err := run(); err != nil || got != "b\n" {
		t.Fatalf("first start: %q, %v", got, err)
	}
	if err := os.Remove(filepath.Join(b, "vibeteam-moved-tool")); err != nil {
		t.Fatal(err)
	}
	tool(a, "a")
	if got, err := run(); err != nil || got != "a\n" {
		t.Fatalf("after the move: %q, %v (want the one in %s)", got, err, a)
	}
	if err := os.Remove(filepath.Join(a, "vibeteam-moved-tool")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(); err == nil || !strings.Contains(err.Error(), "executable file not found") {
		t.Fatalf("once gone: %v, want not found", err)
	}
}
