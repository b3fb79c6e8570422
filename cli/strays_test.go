package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestNoProcessOutlivesItsTaskAsASubreaper is TestNoProcessOutlivesItsTask
// through the vibeteam command, a child subreaper, where a task whose
// group is empty is checked without reading /proc when nothing was
// re-parented to vibeteam: what left the group must still be found.
func TestNoProcessOutlivesItsTaskAsASubreaper(t *testing.T) {
	for _, mode := range []string{"headless", "interactive"} {
		t.Run(mode, func(t *testing.T) {
			p := newProject(t)
			marker := fmt.Sprintf("%d.%d", time.Now().UnixNano()%100000+1, os.Getpid())
			p.write("wf.yaml", fmt.Sprintf(`id: esc
stages:
  - id: s
    tasks:
      - { id: a, adapter: shell, executionMode: %s, prompt: "setsid sh -c 'trap \"\" TERM; exec sleep %s' & setsid sleep %s & sleep 0.2" }
      - { id: b, adapter: shell, executionMode: headless, prompt: "sleep 3" }
`, mode, marker, marker))
			cmd := p.command("run", "wf.yaml", "--grace", "500ms")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Wait() }()
			// When a is DONE (b still runs, so nothing else stops them),
			// what a left must be gone already.
			deadline := time.Now().Add(20 * time.Second)
			for {
				if ss := p.sessions(); len(ss) == 1 && ss[0].TaskStatus["a"] == "DONE" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("task a never ended")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if ss := p.sessions(); ss[0].TaskStatus["b"] == "DONE" {
				t.Fatal("b ended too: the check proves nothing")
			}
			if left := survivors(marker); len(left) != 0 {
				t.Errorf("%d process(es) outlived task a:\n%s", len(left), strings.Join(left, "\n"))
			}
		})
	}
}
