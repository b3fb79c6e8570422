package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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
		{"SIGHUP", syscall.SIGHUP, 129},
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
	// A few lines: whole in the task's record, without a log file.
	log := strings.Join(p.only().Tasks["a"].OutputTail, "\n")
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

// A second interrupt kills at once instead of waiting out the grace period.
func TestSecondInterruptKillsNow(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: k\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: \"ignoreterm pidfile=a.pid sleep=60s\" }\n")
	cmd := p.command("run", "wf.yaml", "--grace", "30s")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return p.exists("a.pid") })
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second interrupt took %s to end the run", d)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130\n%s", err, errb.String())
	}
	pidAlive(t, p.read("a.pid"), false)
}

// A reader of --events - that goes away does not kill vibeteam mid-run.
func TestBrokenStdoutPipe(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: pipe\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: \"pidfile=a.pid print=x sleep=1s print=y\" }\n")
	cmd := p.command("run", "wf.yaml", "--events", "-")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	_, _ = out.Read(buf)
	out.Close() // the reader goes away, like `| head -c 10`
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Errorf("vibeteam died with %v (exit %d)", err, ee.ExitCode())
	}
	if s := p.only(); s.Status != state.StatusCompleted {
		t.Errorf("status %s", s.Status)
	}
	pidAlive(t, p.read("a.pid"), false)
}

func TestDamagedSessionFilesAreErrorsNotPanics(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/sessions/aaaa1111.json", `{"id":"aaaa1111","status":"failed"}`)
	p.write(".vibeteam/sessions/bbbb2222.json", `{"id":"bbbb2222","status":"failed","currentStageIndex":-1,"workflowDefinition":{"kind":"stages","id":"x","steps":[{"type":"stage","id":"s","tasks":[{"id":"a","adapter":"fake","executionMode":"headless","prompt":"x"}]}]}}`)
	for _, args := range [][]string{{"show", "aaaa1111"}, {"resume", "aaaa1111"}, {"resume", "bbbb2222"}, {"show", "bbbb2222"}} {
		r := p.exec(args...)
		if r.code != 2 || !strings.Contains(r.stderr, "damaged") {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	wantCode(t, p.run("sessions"), 0)
}

// A vibeteam killed with SIGKILL cannot stop its tasks; resume stops what it
// left running before it runs the task again.
func TestResumeAfterACrashStopsLeftoverProcesses(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: crash\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: shell, executionMode: headless, prompt: \"echo $$ >> a.pids; [ -f fast ] || sleep 60\" }\n")
	cmd := p.command("run", "wf.yaml")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return p.exists("a.pids") })
	time.Sleep(200 * time.Millisecond)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	first := strings.Fields(p.read("a.pids"))[0]
	pidAlive(t, first, true) // the orphan is still there
	p.write("fast", "")
	r := p.run("resume", p.only().ID, "--grace", "1s")
	wantCode(t, r, 0)
	pidAlive(t, first, false)
	if n := countEvents(p.events(p.only().ID), "orphan_stopped"); n != 1 {
		t.Errorf("%d orphan_stopped events, want 1", n)
	}
}

// survivors lists the live processes whose command line holds marker.
func survivors(marker string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}

// A process that leaves its task's group and session (setsid) is stopped
// with the task all the same, whether the task ends DONE, fails, or runs
// in a PTY.
func TestNoProcessOutlivesItsTask(t *testing.T) {
	for _, c := range []struct {
		name, mode, tail string
		code             int
	}{
		{"headless done", "headless", "", 0},
		{"headless failed", "headless", "; exit 3", 1},
		{"pty done", "interactive", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t)
			marker := fmt.Sprintf("%d.%d", time.Now().UnixNano()%100000, os.Getpid()) // sleep's argument, unique
			p.write("wf.yaml", fmt.Sprintf(`id: esc
stages:
  - id: s
    tasks:
      - { id: a, adapter: shell, executionMode: %s, prompt: "setsid sh -c 'trap \"\" TERM; exec sleep %s' & setsid sleep %s & sleep 0.2%s" }
`, c.mode, marker, marker, c.tail))
			wantCode(t, p.run("run", "wf.yaml", "--grace", "500ms"), c.code)
			if left := survivors(marker); len(left) != 0 {
				t.Errorf("%d process(es) outlived the task:\n%s", len(left), strings.Join(left, "\n"))
			}
		})
	}
}
