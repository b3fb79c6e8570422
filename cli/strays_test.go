package cli

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDaemonWithACleanedEnvironmentIsStopped: a script step starts a
// daemon in a session of its own with an empty environment (no task tag,
// out of the step's process group). It is stopped when the step ends,
// before the next step runs, and nothing outlives the run.
func TestDaemonWithACleanedEnvironmentIsStopped(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: daemon
steps:
  - name: start
    type: script
    command: (env -i /usr/bin/setsid /bin/sh -c 'echo $$ > daemon.pid; exec sleep 313' > /dev/null 2>&1 &) ; while [ ! -s daemon.pid ]; do sleep 0.01; done; echo started
  - name: check
    type: script
    command: if kill -0 $(cat daemon.pid) 2>/dev/null; then echo alive; else echo gone; fi
`)
	r := p.exec("run", "g.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	s := p.only()
	if got := s.Runs["1"].Output; got != "gone" {
		t.Errorf("the daemon was %s when the next step ran", got)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(p.read("daemon.pid")))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the daemon %d outlived the run", pid)
	}
	if !strings.Contains(r.stderr, "a daemon") {
		t.Errorf("the run did not say it stopped a daemon:\n%s", r.stderr)
	}
}
