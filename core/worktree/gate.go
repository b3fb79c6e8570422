package worktree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MergeOptions are the options of MergeWith.
type MergeOptions struct {
	// Gate, when set, checks each merge commit before the base moves.
	Gate Gate
	// Tries bounds how many times the merge is computed (and gated) when
	// the base keeps moving under it; DefaultGateTries when 0.
	Tries int
	// Queued, when set, is called when another merge holds the queue and
	// this one waits for it.
	Queued func()
	// Retries is how many more times a red gate runs before the merge is
	// called red (flaky tests).
	Retries int
}

// DefaultGateTries is how many times a merge is computed again, gate and
// all, when the base moved while it was checked.
const DefaultGateTries = 5

// Gate checks a merge before it lands. It runs in dir, a temporary
// worktree with a detached HEAD at the merge commit (removed afterwards,
// whatever the gate does); green lets the merge land, red leaves the base
// as it was. An error (ctx done) stops the merge, changing nothing.
type Gate func(ctx context.Context, dir string, try GateTry) (green bool, err error)

// GateTry is the merge a gate checks.
type GateTry struct {
	Attempt    int    // 1, then 2... when the base moved during the last
	Base       string // the base branch
	Branch     string // the branch being merged
	BaseCommit string // the base's commit the merge was computed on
	Tip        string // the branch's commit
	Commit     string // the merge commit, checked out in the gate's worktree
	// Batch, for a candidate of several merges (see Batcher), is their
	// branches, oldest first; Commit is then the last one's merge commit.
	Batch []string
}

// gatePrefix starts the name of a gate's worktree under .worktrees; bead
// ids never start with a dot (see beads.SanitizeID).
const gatePrefix = ".gate-"

// queue takes the repository's merge queue: the flock on
// COMMON/vibeteam-merge.lock, held from the computation of a merge to its
// landing. queued is called when another merge holds it.
//
// It is passed to no gate (a gate's children may outlive it), only to the
// git commands that land the merge (see land).
func (r *Repo) queue(ctx context.Context, queued func()) (func(), *os.File, error) {
	unlock, f, err := lockFileWaiting(ctx, filepath.Join(r.CommonDir, "vibeteam-merge.lock"), queued)
	if err != nil {
		return nil, nil, fmt.Errorf("merge queue: %w", err)
	}
	return unlock, f, nil
}

// gate runs g in a worktree at try.Commit: kept's, checked out afresh,
// when kept is not nil, else a new one, removed afterwards.
func (r *Repo) gate(ctx context.Context, kept *keptGate, g Gate, try GateTry) (bool, error) {
	if kept != nil {
		if dir, ok := kept.checkout(ctx, try.Commit); ok {
			return g(ctx, dir, try)
		}
	}
	dir, err := r.addGate(ctx, try.Commit, false)
	if err != nil {
		return false, fmt.Errorf("make the gate's worktree: %w", err)
	}
	// Removed even when ctx is done (Ctrl-C): it is vibeteam's own, and
	// nothing of the user's is in it.
	defer r.removeGate(context.WithoutCancel(ctx), dir)
	return g(ctx, dir, try)
}

// gateRetrying runs the gate, and again up to retries times while it is
// red.
func (r *Repo) gateRetrying(ctx context.Context, kept *keptGate, g Gate, retries int, try GateTry) (bool, error) {
	for n := 0; ; n++ {
		green, err := r.gate(ctx, kept, g, try)
		if err != nil || green || n >= retries {
			return green, err
		}
	}
}

// keptGate is a gate worktree a Batcher keeps from one gate to the next:
// each gate has its commit checked out in it afresh (checkout --force,
// then clean of every file git does not track, ignored ones too), which
// takes no lock, where a worktree made and removed for each gate waits
// for the repository's lock behind the beads' own worktrees. Its lock
// file (COMMON/vibeteam/gates/NAME.lock), held while it is kept, tells
// removeStaleGates, in any process, that it is in use.
type keptGate struct {
	r      *Repo
	name   string
	dir    string
	unlock func()
	broken bool // a checkout failed: the gates make their own worktrees
}

// keepGate makes a kept gate worktree (with nothing checked out yet).
func (r *Repo) keepGate(ctx context.Context) (*keptGate, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	name := gatePrefix + hex.EncodeToString(b[:])
	lockDir := filepath.Join(r.CommonDir, "vibeteam", "gates")
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, err
	}
	unlock, ok, err := tryLockFile(r.gateLock(name))
	if err != nil || !ok {
		return nil, fmt.Errorf("lock the gate worktree %s: %v", name, err)
	}
	k := &keptGate{r: r, name: name, unlock: unlock}
	if k.dir, err = r.addGateNamed(ctx, name, "HEAD", true); err != nil {
		k.release(ctx)
		return nil, err
	}
	return k, nil
}

// checkout makes the kept worktree hold exactly commit's tree; false (and
// the worktree is given up) when git could not.
func (k *keptGate) checkout(ctx context.Context, commit string) (string, bool) {
	if k.broken {
		return "", false
	}
	for _, args := range [][]string{
		{"checkout", "--detach", "--force", "--quiet", commit, "--"},
		{"clean", "-ffdxq"},
	} {
		if _, err := run(ctx, cmd{dir: k.dir, args: args, keep: true}); err != nil {
			k.broken = true
			return "", false
		}
	}
	return k.dir, true
}

// release removes the kept worktree, then lets its lock go.
func (k *keptGate) release(ctx context.Context) {
	if k.dir != "" {
		k.r.removeGate(context.WithoutCancel(ctx), k.dir)
	}
	k.unlock()
	os.Remove(k.r.gateLock(k.name))
}

// gateInUse reports whether the gate worktree named name is kept by a
// live Batcher (its lock is held).
func (r *Repo) gateInUse(name string) bool {
	path := r.gateLock(name)
	if _, err := os.Stat(path); err != nil {
		return false
	}
	unlock, ok, err := tryLockFile(path)
	if err != nil || !ok {
		return true
	}
	unlock()
	return false
}

// addGate makes a worktree at commit, detached, under .worktrees.
func (r *Repo) addGate(ctx context.Context, commit string, noCheckout bool) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return r.addGateNamed(ctx, gatePrefix+hex.EncodeToString(b[:]), commit, noCheckout)
}

// addGateNamed makes the gate worktree .worktrees/name at commit, its
// files checked out unless noCheckout.
func (r *Repo) addGateNamed(ctx context.Context, name, commit string, noCheckout bool) (string, error) {
	ctx, unlock, err := r.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := r.exclude(DefaultExcludes...); err != nil {
		return "", err
	}
	parent := filepath.Join(r.Top, WorktreesDir)
	if info, err := os.Lstat(parent); err == nil && info.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Errorf("%s is a symbolic link: vibeteam does not make or remove worktrees through one; make it a directory", parent)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	dir := filepath.Join(parent, name)
	args := []string{"worktree", "add", "--detach", "--quiet"}
	if noCheckout {
		args = append(args, "--no-checkout")
	}
	if _, err := run(ctx, cmd{dir: r.Top, args: append(args, "--", dir, commit), keep: true}); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// removeGate removes a gate's worktree, whatever is in it.
func (r *Repo) removeGate(ctx context.Context, dir string) {
	ctx, unlock, err := r.lock(ctx)
	if err != nil {
		return
	}
	defer unlock()
	if _, err := run(ctx, cmd{dir: r.Top, args: []string{"worktree", "remove", "--force", "--force", "--", dir}, keep: true}); err != nil {
		// Not (or no longer) a worktree git knows, or one it would not
		// remove: the directory goes, and git forgets it.
		os.RemoveAll(dir)
		_, _ = run(ctx, cmd{dir: r.Top, args: []string{"worktree", "prune"}, keep: true})
	}
	// The .worktrees directory goes with its last worktree.
	os.Remove(filepath.Dir(dir))
}

// removeStaleGates removes the gate worktrees a killed vibeteam left; the
// caller holds the merge queue, so none of them is in use.
//
// A gate worktree a live Batcher keeps is left alone (gateInUse); when
// there is no other, on disk or in git's list, git is not asked.
func (r *Repo) removeStaleGates(ctx context.Context) {
	if !r.mayHaveStaleGates() {
		return
	}
	list, err := r.worktreesNow(ctx)
	if err != nil {
		return
	}
	for _, w := range list {
		if isGateDir(w.Path) && !r.gateInUse(filepath.Base(w.Path)) {
			r.removeGate(ctx, w.Path)
			os.Remove(r.gateLock(filepath.Base(w.Path)))
		}
	}
	// A directory a kill left before git registered it.
	dirs, _ := filepath.Glob(filepath.Join(r.Top, WorktreesDir, gatePrefix+"*"))
	for _, d := range dirs {
		if findPath(list, d) == nil && !r.gateInUse(filepath.Base(d)) {
			r.removeGate(ctx, d)
			os.Remove(r.gateLock(filepath.Base(d)))
		}
	}
}

// gateLock is the lock file of the kept gate worktree named name.
func (r *Repo) gateLock(name string) string {
	return filepath.Join(r.CommonDir, "vibeteam", "gates", name+".lock")
}

// sweepGatesIfIdle removes the stale gate worktrees when the merge queue
// is free (none of its gates runs): taken for a moment, never waited for.
func (r *Repo) sweepGatesIfIdle(ctx context.Context) {
	if !r.mayHaveStaleGates() {
		return
	}
	unlock, ok, err := tryLockFile(filepath.Join(r.CommonDir, "vibeteam-merge.lock"))
	if err != nil || !ok {
		return
	}
	defer unlock()
	r.removeStaleGates(ctx)
}

// mayHaveStaleGates reports whether a gate worktree no live Batcher keeps
// may be there: a directory under .worktrees, or an entry of git's own
// (its administrative directory, named after the worktree's).
func (r *Repo) mayHaveStaleGates() bool {
	for _, pattern := range []string{
		filepath.Join(r.Top, WorktreesDir, gatePrefix+"*"),
		filepath.Join(r.CommonDir, "worktrees", gatePrefix+"*"),
	} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			return true
		}
		for _, d := range found {
			if !r.gateInUse(filepath.Base(d)) {
				return true
			}
		}
	}
	return false
}

func isGateDir(p string) bool {
	return strings.HasPrefix(filepath.Base(p), gatePrefix) && filepath.Base(filepath.Dir(p)) == WorktreesDir
}
