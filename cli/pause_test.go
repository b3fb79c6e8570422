package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	expect "github.com/Netflix/go-expect"

	"github.com/vibeteam/vibeteam/core/state"
)

// syncBuffer collects what the person's terminal showed.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// terminalSession runs the vibeteam binary with a PTY as its controlling
// terminal, as a person at a terminal would.
func terminalSession(t *testing.T, p *project, args ...string) (*expect.Console, *exec.Cmd, *syncBuffer) {
	t.Helper()
	return terminalSessionEnv(t, p, nil, args...)
}

// terminalSessionEnv is terminalSession with env added to vibeteam's.
func terminalSessionEnv(t *testing.T, p *project, env []string, args ...string) (*expect.Console, *exec.Cmd, *syncBuffer) {
	t.Helper()
	screen := &syncBuffer{}
	c, err := expect.NewConsole(expect.WithStdout(screen), expect.WithDefaultTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cmd := p.command(args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Tty(), c.Tty(), c.Tty()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = c.Close()
	})
	consoles.Store(screen, c)
	t.Cleanup(func() { consoles.Delete(screen) })
	return c, cmd, screen
}

// consoles are the terminal sessions' consoles by their screens, for
// waitExit to read on: go-expect reads only while a test expects, and a
// vibeteam writing to a terminal nobody reads stops when its buffer is full.
var consoles sync.Map

// expectAll waits until everything read since the last match holds all of
// strs, in any order. The deadline holds even when go-expect's own does not.
func expectAll(t *testing.T, c *expect.Console, screen *syncBuffer, strs ...string) {
	t.Helper()
	var opts []expect.ExpectOpt
	for _, s := range strs {
		opts = append(opts, expect.String(s))
	}
	done := make(chan error, 1)
	go func() { _, err := c.Expect(expect.All(opts...)); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waiting for %q: %v\nscreen:\n%s", strs, err, screen.String())
		}
	case <-time.After(30 * time.Second):
		// go-expect's read does not end when the console closes; the
		// goroutine is left behind with the failed test.
		_ = c.Close()
		t.Fatalf("no %q within 30s\nscreen:\n%s", strs, screen.String())
	}
}

// expectString waits for s with a deadline; see expectAll.
func expectString(t *testing.T, c *expect.Console, s string, screen *syncBuffer) {
	t.Helper()
	expectAll(t, c, screen, s)
}

// waitExit waits for the command with a deadline.
func waitExit(t *testing.T, cmd *exec.Cmd, screen *syncBuffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if c, ok := consoles.Load(screen); ok {
		// What vibeteam prints from now on is read (into screen), until
		// the console is closed.
		go func() { _, _ = c.(*expect.Console).ExpectEOF() }()
	}
	select {
	case err := <-done:
		return exitCode(err)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("vibeteam did not finish\n%s\n%s", screen.String(), aftermath(cmd.Dir))
	}
	return -1
}

// aftermath is what a run in dir left for a person to find out why it
// hung: the fake agents' records, the last events, the end of each task's
// terminal as its agent drew it.
func aftermath(dir string) string {
	var b strings.Builder
	if data, err := os.ReadFile(filepath.Join(dir, "rec.txt")); err == nil {
		fmt.Fprintf(&b, "rec.txt:\n%s\n", data)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, ".vibeteam", "logs", "*.jsonl"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "last events (%s):\n%s\n", filepath.Base(l), strings.Join(lines[max(0, len(lines)-25):], "\n"))
	}
	raws, _ := filepath.Glob(filepath.Join(dir, ".vibeteam", "logs", "*", "*.raw.log"))
	for _, r := range raws {
		data, _ := os.ReadFile(r)
		fmt.Fprintf(&b, "end of %s:\n%q\n", filepath.Base(r), data[max(0, len(data)-1500):])
	}
	return b.String()
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestPauseAtTheTerminal(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", `id: pause
stages:
  - id: s
    tasks:
      - { id: a, name: Asker, adapter: tui, pendingInputs: ["please ask", "show the menu", "free text"] }
`)
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
	step := func(want, answer string) {
		t.Helper()
		expectString(t, c, want, screen)
		expectString(t, c, "reply › ", screen)
		if _, err := c.SendLine(answer); err != nil {
			t.Fatal(err)
		}
	}
	step("Asker (a) needs you: interaction_confirm", "y")  // one key: sent alone
	step("Asker (a) needs you: interaction_menu", ":down") // arrow, then Enter picks option 2
	step("Asker (a) needs you: interaction_menu", "")
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
	if got := p.read("rec.txt"); got != "line:please ask\nanswer:y\nline:show the menu\nmenu:2\nline:free text\n" {
		t.Errorf("the TUI received %q", got)
	}
	s := p.only()
	if s.Status != state.StatusCompleted {
		t.Errorf("status %s", s.Status)
	}
	if !strings.Contains(screen.String(), "Apply the change? (y/n)") {
		t.Errorf("the panel did not show the screen excerpt")
	}
}

func TestPauseAtTheTerminalQuitParks(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: q\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"ask\"] }\n")
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
	expectString(t, c, "reply › ", screen)
	_, _ = c.SendLine(":quit")
	if code := waitExit(t, cmd, screen); code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, screen.String())
	}
	s := p.only()
	if s.Status != state.StatusWaiting {
		t.Errorf("status %s, want waiting", s.Status)
	}
	// A park reads as waiting, not as a failure.
	r := p.exec("show", s.ID)
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "error") || !strings.Contains(r.stdout, "waiting: parked while waiting for a person") || !strings.Contains(r.stdout, "vibeteam resume "+s.ID) {
		t.Errorf("show of a parked session:\n%s", r.stdout)
	}
}

func TestPauseAtTheTerminalDoneCompletesTheTask(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: d\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"ask\", \"never sent\"] }\n")
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
	expectString(t, c, "reply › ", screen)
	_, _ = c.SendLine(":done")
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
	s := p.only()
	if s.TaskStatus["a"] != state.TaskDone || s.Tasks["a"].Reason != "completed_by_user" {
		t.Errorf("task %s (%s)", s.TaskStatus["a"], s.Tasks["a"].Reason)
	}
	pidAlive(t, p.read("tui.pid"), false)
}

// Two tasks wait at once: the second is announced with a bell and asked
// after the first.
func TestPauseAsksOneTaskAtATime(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/adapters/tui2.yaml", strings.NewReplacer("name: tui", "name: tui2", "rec.txt", "rec2.txt", "tui.pid", "tui2.pid").Replace(p.read(".vibeteam/adapters/tui.yaml")))
	p.write("wf.yaml", `id: two
stages:
  - id: s
    tasks:
      - { id: a, name: First, adapter: tui, pendingInputs: ["ask"] }
      - { id: b, name: Second, adapter: tui2, pendingInputs: ["ask"] }
`)
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
	// Announced after the first panel, or in it when both started waiting
	// before it was drawn.
	expectAll(t, c, screen, "needs you", "is waiting too", "reply › ")
	_, _ = c.SendLine("y")
	expectString(t, c, "reply › ", screen)
	_, _ = c.SendLine("n")
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
	out := screen.String()
	if !strings.Contains(out, "\a") {
		t.Error("no bell for the second waiting task")
	}
	first, second := p.read("rec.txt"), p.read("rec2.txt")
	if !(strings.Contains(first, "answer:") && strings.Contains(second, "answer:")) || first == second {
		t.Errorf("answers: %q %q", first, second)
	}
}

func TestPauseAttachHandsOverTheTerminal(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: at\nstages:\n  - id: s\n    tasks:\n      - { id: a, name: Asker, adapter: tui, pendingInputs: [\"ask\"] }\n")
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
	expectString(t, c, "reply › ", screen)
	_, _ = c.SendLine(":attach")
	expectString(t, c, "attached to Asker", screen)
	expectString(t, c, "Apply the change? (y/n)", screen) // the live screen, as the TUI draws it
	time.Sleep(300 * time.Millisecond)
	_, _ = c.Send("y")
	expectString(t, c, "answered y", screen)
	time.Sleep(300 * time.Millisecond)
	_, _ = c.Send("\x1d") // Ctrl-]
	expectString(t, c, "(detached)", screen)
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
	if got := p.read("rec.txt"); got != "line:ask\nanswer:y\n" {
		t.Errorf("the TUI received %q", got)
	}
	if s := p.only(); s.TaskStatus["a"] != state.TaskDone {
		t.Errorf("task %s", s.TaskStatus["a"])
	}
}

// End of input at the prompt parks instead of leaving the task waiting.
func TestPauseEndOfInputParks(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: eof\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"ask\"] }\n")
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml")
	expectString(t, c, "reply › ", screen)
	_, _ = c.Send("\x04") // Ctrl-D
	if code := waitExit(t, cmd, screen); code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, screen.String())
	}
	if s := p.only(); s.Status != state.StatusWaiting {
		t.Errorf("status %s", s.Status)
	}
}

// An answer the TUI ignores leaves the question on an unchanged screen: it
// is asked again after the cooldown instead of hanging.
func TestPauseAsksAgainWhenTheAnswerChangedNothing(t *testing.T) {
	for _, answer := range []string{"x", ":up"} {
		t.Run(answer, func(t *testing.T) {
			p := newProject(t)
			input := "ask"
			if answer == ":up" {
				input = "menu" // option 1 is already selected
			}
			p.write("wf.yaml", "id: h\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\""+input+"\"], timeout: 20s }\n")
			c, cmd, screen := terminalSession(t, p, "run", "wf.yaml", "--grace", "300ms")
			expectString(t, c, "reply › ", screen)
			_, _ = c.SendLine(answer)
			expectString(t, c, "needs you", screen) // asked again
			expectString(t, c, "reply › ", screen)
			if input == "ask" {
				_, _ = c.SendLine("y")
			} else {
				_, _ = c.SendLine("1")
			}
			if code := waitExit(t, cmd, screen); code != 0 {
				t.Fatalf("exit %d\n%s", code, screen.String())
			}
		})
	}
}

// While a person has the terminal, silence is not inactivity.
func TestAttachPausesTheInactivityTimeout(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: h\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"ask\"], inactivityTimeout: 1500ms }\n")
	c, cmd, screen := terminalSession(t, p, "run", "wf.yaml", "--grace", "300ms")
	expectString(t, c, "reply › ", screen)
	_, _ = c.SendLine(":attach")
	expectString(t, c, "Ctrl-] detaches", screen)
	time.Sleep(3 * time.Second) // a person reading the screen
	_, _ = c.Send("y")
	expectString(t, c, "answered y", screen)
	time.Sleep(300 * time.Millisecond)
	_, _ = c.Send("\x1d")
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
}
