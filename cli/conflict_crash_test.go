package cli

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// TestCrashMatrixConflictResolution kills vibeteam (its process, or its
// whole process group) at seeded random moments of a merge whose conflict
// an agent resolves, resumes until the session ends, and checks that the
// bead's merge landed once, resolved, with no marker: a kill during the
// resolution neither loses nor doubles the merge.
func TestCrashMatrixConflictResolution(t *testing.T) {
	t.Parallel()
	rng := crashRand(t, 31)
	span := time.Duration(conflictCrashTrial(t, -1, false, nil, 0))
	t.Logf("an uninterrupted resolution takes %v", span)
	kills := 0
	const trials = 6
	for n := range trials {
		kills += conflictCrashTrial(t, n, n%2 == 1, rng, span)
	}
	t.Logf("%d trials, %d kills", trials, kills)
	if kills < trials*2/3 {
		t.Errorf("only %d kills in %d trials: the matrix did not exercise resume", kills, trials)
	}
}

// conflictCrashTrial runs one trial; with rng nil nothing is killed and
// it returns how long the resume took, in kills otherwise.
func conflictCrashTrial(t *testing.T, n int, group bool, rng *rand.Rand, span time.Duration) (kills int) {
	t.Helper()
	spell := "write=../../agent-started:x sleep=300ms write=README:Say_one,_say_two sleep=200ms cat=../../ok.md\n"
	p, s := conflictProject(t, "echo {{.bead.title}} > README", fixerLong, spell)
	root := p.git("rev-list", "--max-parents=0", "main")
	label := fmt.Sprintf("trial %d (group %v)", n, group)
	started := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt > 12 {
			t.Fatalf("%s: never ended", label)
		}
		cmd := p.command("resume", s.ID)
		cmd.Env = append(cmd.Env, "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB="+p.db, "FAKEBD_LOG="+p.log)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		// The first two trials are killed while the agent resolves (the
		// worktree in the middle of the merge); the others anywhere.
		var killAt <-chan time.Time
		stop := make(chan struct{})
		if rng != nil && attempt < 2 {
			killAt = time.After(time.Duration(rng.Int64N(int64(span))))
			if n < 2 && attempt == 0 {
				killAt = whenExists(p.path("agent-started"), stop)
			}
		}
		if killAt != nil {
			select {
			case err = <-done:
			case <-killAt:
				if group {
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				} else {
					_ = cmd.Process.Signal(syscall.SIGKILL)
				}
				err = <-done
				kills++
				if n < 2 && attempt == 0 && !strings.Contains(gitIn(t, p.path(".worktrees/bd-2"), "status"), "You have unmerged paths") {
					t.Errorf("%s: killed while the agent resolved, and the worktree is not in the middle of the merge:\n%s", label, gitIn(t, p.path(".worktrees/bd-2"), "status"))
				}
			}
		} else {
			err = <-done
		}
		close(stop)
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code == -1 {
			continue
		}
		if code != 0 {
			s = p.sessionByID(s.ID)
			t.Fatalf("%s: attempt %d exit %d (%s %s: %s)\n%s", label, attempt, code, s.Status, s.BlockedReason, s.Error, errb.String())
		}
		break
	}
	took := time.Since(started)
	s = p.sessionByID(s.ID)
	if s.Status != state.StatusCompleted || s.Merged != p.git("rev-parse", "main") {
		t.Fatalf("%s: session %s, merged %q", label, s.Status, s.Merged)
	}
	if got := p.git("show", "main:README"); got != "Say one, say two" {
		t.Errorf("%s: main's README %q", label, got)
	}
	merges := p.git("log", "--first-parent", "--merges", "--format=%s", root+"..main")
	if strings.Count(merges, "\n") != 1 || strings.Count(merges, "bd-2") != 1 {
		t.Errorf("%s: main's merges, want one of each bead:\n%s", label, merges)
	}
	if p.exists(".worktrees/bd-2") {
		t.Errorf("%s: the worktree is left", label)
	}
	if rng == nil {
		return int(took)
	}
	return kills
}

// whenExists fires once path exists (polled; a minute at most), unless
// stop is closed first.
func whenExists(path string, stop <-chan struct{}) <-chan time.Time {
	c := make(chan time.Time, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(time.Minute); time.Now().Before(end); {
			if _, err := os.Stat(path); err == nil {
				break
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
		c <- time.Now()
	}()
	return c
}
