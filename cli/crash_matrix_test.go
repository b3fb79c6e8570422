package cli

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// crashGrimoire works on a bead in its worktree and merges it. Every step
// writes where it ran to a trace outside the repository, so a step that
// ran in the user's checkout shows.
const crashGrimoire = `name: crash
steps:
  - name: work
    type: script
    command: pwd >> "$TRACE" && echo feature > feature.txt && sleep 0.05
  - name: more
    type: script
    command: pwd >> "$TRACE" && mkdir -p docs && echo documented > docs/feature.md && sleep 0.05
  - name: check
    type: script
    command: pwd >> "$TRACE" && test -f feature.txt && test -f docs/feature.md
  - name: merge
    type: merge
    require_review: %s
  - name: after
    type: script
    command: pwd >> "$TRACE"
`

// crashRand is a kill -9 trial's source of random moments: seeded from
// the clock, or from VIBETEAM_CRASH_SEED to replay a failure (the seed is
// logged); stream tells one test's sequence from another's.
func crashRand(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("VIBETEAM_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("VIBETEAM_CRASH_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (VIBETEAM_CRASH_SEED=%d reproduces it)", seed, seed)
	return rand.New(rand.NewPCG(seed, stream))
}

// TestCrashMatrixBeadMerge kills vibeteam (its process, or its whole
// process group) at seeded random moments of a bead run that ends in a
// merge, resumes until the session ends, and checks what a user would:
// their own files untouched, the work on main once, nothing left behind,
// and no step run outside the bead's worktree.
func TestCrashMatrixBeadMerge(t *testing.T) {
	t.Parallel()
	rng := crashRand(t, 15)

	type variant struct {
		name   string
		group  bool // kill the whole process group
		review bool // require_review: the kills land in resume --approve-merge
	}
	var trials []variant
	for i := 0; i < 12; i++ {
		trials = append(trials, variant{"pid", false, false})
	}
	for i := 0; i < 12; i++ {
		trials = append(trials, variant{"group", true, false})
	}
	for i := 0; i < 8; i++ {
		trials = append(trials, variant{"review", i%2 == 0, true})
	}
	// The kills land anywhere in a run: its length is measured first, on
	// a run nothing kills.
	// The quicker of two: a calibration slowed by a busy moment would put
	// most kills after the (quicker) trials have ended.
	span := min(time.Duration(crashTrial(t, -1, "calibration", false, false, nil, 0)),
		time.Duration(crashTrial(t, -2, "calibration", false, false, nil, 0)))
	t.Logf("an uninterrupted run takes %v", span)
	kills := 0
	for n, v := range trials {
		kills += crashTrial(t, n, v.name, v.group, v.review, rng, span)
	}
	t.Logf("%d trials, %d kills", len(trials), kills)
	// A run may end before its kill when the machine is quicker than at
	// the calibration; most must be killed for the matrix to mean much.
	if kills < len(trials)*2/3 {
		t.Errorf("only %d kills in %d trials: the matrix did not exercise resume", kills, len(trials))
	}
}

// crashTrial runs one trial; with rng nil nothing is killed and it returns
// how long the run took, in kills otherwise.
func crashTrial(t *testing.T, n int, name string, group, review bool, rng *rand.Rand, span time.Duration) (kills int) {
	t.Helper()
	p := newBeadProject(t)
	trace := filepath.Join(t.TempDir(), "trace")
	p.write(".vibeteam/grimoires/crash.yaml", fmt.Sprintf(crashGrimoire, strconv.FormatBool(review)))
	p.write("bead.json", `{"id":"bd-7","title":"Crash me","status":"open","issue_type":"feature"}`)
	p.git("add", "bead.json")
	p.git("commit", "-q", "-m", "bead")
	// The user's own work: a change to a tracked file, an untracked file.
	p.write("README", "hello\nmy local edit, not committed\n")
	p.write("notes.txt", "mine, untracked\n")
	userReadme, userNotes := p.read("README"), p.read("notes.txt")
	mainBefore := p.git("rev-parse", "main")

	label := fmt.Sprintf("trial %d (%s)", n, name)
	started := time.Now()
	id := ""
	approve := false
	for attempt := 0; ; attempt++ {
		if attempt > 12 {
			t.Fatalf("%s: never ended", label)
		}
		args := []string{"run", "crash", "--bead-file", "bead.json"}
		if id != "" {
			args = []string{"resume", id}
			if approve {
				args = append(args, "--approve-merge")
			}
		}
		cmd := p.command(args...)
		cmd.Env = append(cmd.Env, "TRACE="+trace)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		// The first run (and, with a review, the first approval) is always
		// killed, somewhere in its span; later ones anywhere or not at all.
		killNow := rng != nil && (attempt < 3 || (review && approve && kills < 2))
		if killNow {
			delay := time.Duration(rng.Int64N(int64(span) * 3 / 4))
			if attempt > 0 && !(review && approve && kills < 2) {
				delay = time.Duration(rng.Int64N(int64(span) * 3 / 2))
			}
			select {
			case err = <-done:
			case <-time.After(delay):
				if group {
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				} else {
					_ = cmd.Process.Signal(syscall.SIGKILL)
				}
				err = <-done
				kills++
			}
		} else {
			err = <-done
		}
		if id == "" {
			id = onlySessionID(t, p.project)
			if id == "" {
				continue // killed before the session was saved: run again
			}
		}
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		switch code {
		case 0:
		case -1: // killed
			continue
		case 3:
			s := p.sessionByID(id)
			if review && s.Status == state.StatusPendingMerge {
				approve = true
				continue
			}
			t.Fatalf("%s: attempt %d parked (%s): %s\n%s", label, attempt, s.Status, s.Error, errb.String())
		default:
			t.Fatalf("%s: attempt %d exit %d\n%s", label, attempt, code, errb.String())
		}
		break
	}

	took := time.Since(started)
	s := p.sessionByID(id)
	if s.Status != state.StatusCompleted || s.Merged == "" {
		t.Fatalf("%s: session %s, merged %q: %s", label, s.Status, s.Merged, s.Error)
	}
	// The user's files are as they left them; main has the work once.
	if got := p.read("README"); got != userReadme {
		t.Errorf("%s: README = %q", label, got)
	}
	if got := p.read("notes.txt"); got != userNotes {
		t.Errorf("%s: notes.txt = %q", label, got)
	}
	if got := p.git("status", "--porcelain=v1", "--untracked-files=all"); got != "M README\n?? notes.txt" && got != " M README\n?? notes.txt" {
		t.Errorf("%s: git status of the checkout:\n%s", label, got)
	}
	if got := p.git("rev-list", "--count", mainBefore+"..main", "--", "feature.txt"); got != "1" {
		t.Errorf("%s: %s commit(s) on main bring feature.txt, want 1:\n%s", label, got, p.git("log", "--oneline", "--graph", "main"))
	}
	if got := p.git("rev-list", "--count", "--merges", mainBefore+"..main"); got != "1" {
		t.Errorf("%s: %s merge commit(s) on main, want 1", label, got)
	}
	if p.read("feature.txt") != "feature\n" || p.read("docs/feature.md") != "documented\n" {
		t.Errorf("%s: the checkout does not have the merged work", label)
	}
	// Nothing left behind.
	if p.exists(".worktrees/bd-7") {
		t.Errorf("%s: the worktree is left", label)
	}
	if got := p.git("branch", "--list", "vibeteam/*"); got != "" {
		t.Errorf("%s: branch left: %s", label, got)
	}
	if owners, _ := filepath.Glob(p.path(".git/vibeteam/worktrees/*.json")); len(owners) > 0 {
		t.Errorf("%s: owner record left: %v", label, owners)
	}
	for _, f := range []string{".git/index.lock", ".git/MERGE_HEAD"} {
		if p.exists(f) {
			t.Errorf("%s: %s left", label, f)
		}
	}
	// No step ran anywhere but in the bead's worktree.
	data, _ := os.ReadFile(trace)
	wt := filepath.Join(p.dir, ".worktrees", "bd-7")
	if real, err := filepath.EvalSymlinks(p.dir); err == nil {
		wt = filepath.Join(real, ".worktrees", "bd-7")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != wt {
			t.Errorf("%s: a step ran in %q, not in the worktree %s", label, line, wt)
		}
	}
	if rng == nil {
		return int(took)
	}
	return kills
}
