package cli

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// TestBacklogCrashTrials kills a `run --ready` (its pid, or its whole
// process group) at seeded random moments, and resumes it, until it
// completes: every bead must land on main exactly once, the dependant
// after its blocker, with no worktree, branch or owner record left, and
// the backlog and every bead session completed.
func TestBacklogCrashTrials(t *testing.T) {
	t.Parallel()
	rng := crashRand(t, 19)
	span := backlogTrial(t, -1, false, false, nil, 0)
	t.Logf("an uninterrupted backlog takes %v", span)
	kills := 0
	for n := range 6 {
		kills += int(backlogTrial(t, n, n%2 == 1, false, rng, span))
	}
	if kills < 4 {
		t.Errorf("only %d kills in 6 trials", kills)
	}
}

// TestBacklogCrashTrialsBatched is TestBacklogCrashTrials with a gate and
// the beads' merges batched (merge.batch: 4, --jobs 4): a kill during a
// batch's gate or landing, then resume, never lands a bead twice nor
// loses one.
func TestBacklogCrashTrialsBatched(t *testing.T) {
	t.Parallel()
	rng := crashRand(t, 23)
	span := backlogTrial(t, -1, false, true, nil, 0)
	t.Logf("an uninterrupted backlog takes %v", span)
	kills := 0
	for n := range 6 {
		kills += int(backlogTrial(t, n, n%2 == 1, true, rng, span))
	}
	if kills < 4 {
		t.Errorf("only %d kills in 6 trials", kills)
	}
}

// backlogTrial runs one trial; without rng nothing is killed and it
// returns how long the backlog took; with one, the kills.
func backlogTrial(t *testing.T, n int, group, batched bool, rng *rand.Rand, span time.Duration) time.Duration {
	t.Helper()
	p, logPath := newBacklogProject(t,
		bead("bd-1", "One", nil), bead("bd-2", "Two", nil), bead("bd-3", "Three", nil),
		bead("bd-4", "After one", blocks("bd-1")),
	)
	jobs := "2"
	if batched {
		jobs = "4"
		p.write(".vibeteam/grimoires/ship.yaml", strings.Replace(backlogGrimoire, "require_review: false", "require_review: false\n    gate: true", 1))
		p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\nmerge:\n  gate: sleep 0.3\n  batch: 4\n")
	}
	env := []string{"PATH=" + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log}
	start := func(args ...string) *execution {
		cmd := p.command(args...)
		cmd.Env = append(cmd.Env, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		e := &execution{}
		cmd.Stderr = &e.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e.cmd = cmd
		return e
	}
	args := []string{"run", "--ready", "--jobs", jobs, "--headless", "--set", "log=" + logPath, "--set", "pause=0.2"}
	began := time.Now()
	if rng == nil {
		e := start(args...)
		if err := e.cmd.Wait(); err != nil {
			t.Fatalf("calibration: %v\n%s", err, e.stderr.String())
		}
		return time.Since(began)
	}
	var kills time.Duration
	var id string
	for attempt := 0; ; attempt++ {
		if attempt > 8 {
			t.Fatalf("trial %d: not completed after %d resumes", n, attempt)
		}
		var e *execution
		if id == "" {
			e = start(args...)
		} else {
			e = start("resume", id, "--headless")
		}
		// The first run is always killed; a resume sometimes.
		if attempt == 0 || rng.IntN(2) == 0 {
			// The first run's kill comes within two thirds of the
			// calibration's length: a calibration slowed by a busy moment
			// must not leave the later, quicker runs unkilled (the matrix
			// then tests nothing, and says so).
			window := span
			if attempt == 0 {
				window = span * 2 / 3
			}
			at := time.Duration(rng.Int64N(int64(window)))
			timer := time.AfterFunc(at, func() {
				pid := e.cmd.Process.Pid
				if group {
					pid = -pid
				}
				_ = syscall.Kill(pid, syscall.SIGKILL)
			})
			_ = e.cmd.Wait()
			if timer.Stop() {
				// Finished before its kill.
			} else {
				kills++
			}
		} else {
			_ = e.cmd.Wait()
		}
		if id == "" {
			for _, s := range p.sessions() {
				if s.Backlog != nil {
					id = s.ID
				}
			}
			if id == "" {
				// Killed before the backlog was saved: nothing to resume;
				// run again.
				attempt = -1
				continue
			}
		}
		code := e.cmd.ProcessState.ExitCode()
		if code == 0 {
			break
		}
		if code != -1 {
			t.Fatalf("trial %d attempt %d: exit %d\n%s", n, attempt, code, e.stderr.String())
		}
	}
	merges := p.mergesOf()
	for _, b := range []string{"bd-1", "bd-2", "bd-3", "bd-4"} {
		if merges[b] != 1 {
			t.Errorf("trial %d: %s landed %d times", n, b, merges[b])
		}
	}
	for _, l := range workLog(t, logPath) {
		if l[0] == "start" && l[1] == "bd-4" && !strings.Contains(strings.Join(l[2:], " "), "bd-1.txt") {
			t.Errorf("trial %d: bd-4 started before bd-1 landed: %v", n, l)
		}
	}
	bl := p.sessionByID(id)
	if bl.Status != state.StatusCompleted {
		t.Errorf("trial %d: backlog %s", n, bl.Status)
	}
	for _, b := range bl.Backlog.Beads {
		if s := p.sessionByID(b.Session); s.Status != state.StatusCompleted {
			t.Errorf("trial %d: bead %s session %s", n, b.ID, s.Status)
		}
	}
	if out := p.git("worktree", "list"); strings.Count(out, "\n") != 0 {
		t.Errorf("trial %d: worktrees left:\n%s", n, out)
	}
	if out := p.git("branch", "--list", "vibeteam/*"); out != "" {
		t.Errorf("trial %d: branches left: %s", n, out)
	}
	return kills
}

type execution struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
}
