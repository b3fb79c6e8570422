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

// gate runs g in a new worktree at try.Commit, removed afterwards.
func (r *Repo) gate(ctx context.Context, g Gate, try GateTry) (bool, error) {
	dir, err := r.addGate(ctx, try.Commit)
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
func (r *Repo) gateRetrying(ctx context.Context, g Gate, retries int, try GateTry) (bool, error) {
	for n := 0; ; n++ {
		green, err := r.gate(ctx, g, try)
		if err != nil || green || n >= retries {
			return green, err
		}
	}
}

// addGate makes a worktree at commit, detached, under .worktrees.
func (r *Repo) addGate(ctx context.Context, commit string) (string, error) {
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
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	dir := filepath.Join(parent, gatePrefix+hex.EncodeToString(b[:]))
	if _, err := run(ctx, cmd{dir: r.Top, args: []string{"worktree", "add", "--detach", "--quiet", "--", dir, commit}, keep: true}); err != nil {
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
func (r *Repo) removeStaleGates(ctx context.Context) {
	list, err := r.worktreesNow(ctx)
	if err != nil {
		return
	}
	for _, w := range list {
		if isGateDir(w.Path) {
			r.removeGate(ctx, w.Path)
		}
	}
	// A directory a kill left before git registered it.
	dirs, _ := filepath.Glob(filepath.Join(r.Top, WorktreesDir, gatePrefix+"*"))
	for _, d := range dirs {
		if findPath(list, d) == nil {
			r.removeGate(ctx, d)
		}
	}
}

func isGateDir(p string) bool {
	return strings.HasPrefix(filepath.Base(p), gatePrefix) && filepath.Base(filepath.Dir(p)) == WorktreesDir
}
