package cli

import (
	"bytes"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deepLoops is a grimoire with loops nested depth deep, each running
// iterations times, around one script step (flow style: the file grows
// linearly with the depth).
func deepLoops(depth, iterations int) string {
	var b strings.Builder
	b.WriteString("name: deep\nsteps:\n")
	for i := 0; i < depth; i++ {
		b.WriteString("- {name: l" + itoa(i) + ", type: loop, max_iterations: " + itoa(iterations) + ", on_max_iterations: exit, steps: [\n")
	}
	b.WriteString("{name: work, type: script, command: echo step}")
	b.WriteString(strings.Repeat("]}", depth) + "\n")
	return strings.Replace(b.String(), "[\n- {", "[\n{", -1)
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestDeepNesting: loops nested past the limit are refused at file:line,
// quickly, by validate and by run; at the limit they run.
func TestDeepNesting(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("deep.yaml", deepLoops(3000, 2))
	for _, cmd := range [][]string{{"validate", "deep.yaml"}, {"run", "deep.yaml"}, {"preview", "deep.yaml"}} {
		start := time.Now()
		r := p.exec(cmd...)
		took := time.Since(start)
		if r.code != 2 || !strings.Contains(r.stderr, "deep.yaml:") || !strings.Contains(r.stderr, "nested more than 32 deep") {
			t.Errorf("%s: exit %d\n%s", cmd[0], r.code, firstLines(r.stderr, 5))
		}
		if took > 10*time.Second {
			t.Errorf("%s of a 3000-deep file took %v", cmd[0], took)
		}
	}
	p.write("ok.yaml", deepLoops(32, 1))
	if r := p.exec("run", "ok.yaml"); r.code != 0 {
		t.Fatalf("32 deep: exit %d\n%s", r.code, firstLines(r.stderr, 20))
	}
	s := p.only()
	if len(s.Runs) != 33 {
		t.Errorf("32 loops and a step: %d runs", len(s.Runs))
	}
}

// TestSIGTERMTakesEffectAtOnce: loops 32 deep of two iterations each (a
// run that would take ages), SIGTERM in the middle: vibeteam stops, saves
// and exits 143 within a second.
func TestSIGTERMTakesEffectAtOnce(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("deep.yaml", deepLoops(32, 2))
	cmd := p.command("run", "deep.yaml")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Busy: some steps have run.
	deadline := time.Now().Add(30 * time.Second)
	for countSteps(p) < 5 {
		if time.Now().After(deadline) {
			t.Fatal("no step ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sent := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 20 s after SIGTERM\n%s", firstLines(errb.String(), 20))
	}
	took := time.Since(sent)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Errorf("exit %v, want 143\n%s", err, firstLines(errb.String(), 20))
	}
	t.Logf("SIGTERM to exit: %v", took)
	if took > time.Second {
		t.Errorf("SIGTERM took %v to take effect", took)
	}
	if s := p.only(); s.Status != "cancelled" {
		t.Errorf("session %s after SIGTERM", s.Status)
	}
}

func countSteps(p *project) int {
	ids := p.sessions()
	if len(ids) == 0 {
		return 0
	}
	return len(ids[0].Runs)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
