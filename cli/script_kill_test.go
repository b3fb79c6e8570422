package cli

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second interrupt kills a script step's processes at once, as it does a
// task's: a script that ignores SIGTERM does not hold the run for the
// grace period.
func TestSecondInterruptKillsAScriptNow(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: stubborn
steps:
  - name: stubborn
    type: script
    command: "trap '' TERM; echo $$ > s.pid; sleep 60"
`)
	cmd := p.command("run", "g.yaml", "--grace", "30s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	await := func(want string) {
		t.Helper()
		timeout := time.After(15 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("vibeteam ended before saying %q:\n%s", want, strings.Join(seen, "\n"))
				}
				seen = append(seen, l)
				if strings.Contains(l, want) {
					return
				}
			case <-timeout:
				t.Fatalf("vibeteam did not say %q in 15s:\n%s", want, strings.Join(seen, "\n"))
			}
		}
	}
	waitFor(t, func() bool { return p.exists("s.pid") && strings.TrimSpace(p.read("s.pid")) != "" })
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	await("again to kill them now")
	_ = cmd.Process.Signal(syscall.SIGINT)
	for range lines {
	}
	err = cmd.Wait()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the second interrupt took %s to end the run (grace 30s)", d)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130", err)
	}
	pidAlive(t, p.read("s.pid"), false)
}
