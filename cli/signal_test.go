package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// TestSignalsStopEveryProcess runs the real binary, interrupts it, and
// counts the agent processes (and their children) left behind.
func TestSignalsStopEveryProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		code int
	}{
		{"SIGINT", syscall.SIGINT, 130},
		{"SIGTERM", syscall.SIGTERM, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			p.write("wf.yaml", `id: sig
stages:
  - id: s
    tasks:
      - { id: a, adapter: fake, executionMode: headless, prompt: "pidfile=a.pid spawn=a.child sleep=60s" }
      - { id: b, adapter: fake, executionMode: headless, prompt: "ignoreterm pidfile=b.pid spawn=b.child sleep=60s" }
      - { id: c, adapter: fake, executionMode: headless, prompt: "print=quick" }
`)
			cmd := p.command("run", "wf.yaml", "--grace", "700ms")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return p.exists("a.child") && p.exists("b.child") })
			time.Sleep(200 * time.Millisecond)
			_ = cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, errb.String())
			}
			for _, f := range []string{"a.pid", "a.child", "b.pid", "b.child"} {
				pidAlive(t, p.read(f), false)
			}
			s := p.only()
			if s.Status != state.StatusCancelled {
				t.Errorf("status %s, want cancelled", s.Status)
			}
			if s.TaskStatus["a"] == state.TaskDone || s.TaskStatus["b"] == state.TaskDone {
				t.Errorf("stopped tasks marked DONE: %v", s.TaskStatus)
			}
			if s.TaskStatus["c"] != state.TaskDone {
				t.Errorf("finished task c is %s", s.TaskStatus["c"])
			}
			if !strings.Contains(errb.String(), "vibeteam resume "+s.ID) {
				t.Errorf("stderr does not say how to resume:\n%s", errb.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty: %q", out.String())
			}
		})
	}
}

// TestOutputIsolation: agent output never reaches vibeteam's own streams
// unless --verbose asks for it.
func TestOutputIsolation(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: iso
stages:
  - id: s
    tasks:
      - { id: a, adapter: fake, executionMode: headless, prompt: "print=SECRET_OUT stderr=SECRET_ERR ansi" }
`)
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 0)
	if r.stdout != "" {
		t.Errorf("stdout not empty: %q", r.stdout)
	}
	if strings.Contains(r.stderr, "SECRET") {
		t.Errorf("agent output leaked to stderr:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "task a") {
		t.Errorf("no plain status lines without a TTY:\n%s", r.stderr)
	}
	log := p.read(".vibeteam/logs/" + p.only().ID + "/a.log")
	if !strings.Contains(log, "SECRET OUT") || !strings.Contains(log, "green bold line") || strings.Contains(log, "\x1b") {
		t.Errorf("task log is not the clean output:\n%q", log)
	}
	r = p.exec("run", "wf.yaml", "--verbose")
	if !strings.Contains(r.stderr, "[a] SECRET OUT") || r.stdout != "" {
		t.Errorf("--verbose did not mirror output with the task name:\n%s", r.stderr)
	}
}

func TestSecondProcessCannotResumeALockedSession(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: lock\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: \"pidfile=a.pid sleep=30s\" }\n")
	cmd := p.command("run", "wf.yaml", "--grace", "500ms")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	waitFor(t, func() bool { return p.exists("a.pid") })
	id := p.only().ID
	r := p.run("resume", id)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "in use") {
		t.Errorf("locked resume says: %s", r.stderr)
	}
	r = p.run("sessions", "--json")
	if !strings.Contains(r.stdout, `"running": true`) {
		t.Errorf("running session not marked: %s", r.stdout)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
