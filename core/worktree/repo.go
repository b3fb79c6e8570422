// Package worktree gives each bead its own git worktree and branch, commits
// the work done there and merges it back into the base branch without ever
// touching the user's checkout or uncommitted changes: a merge is computed
// in git's object store first (git merge-tree), and a conflicting or refused
// merge leaves every ref, index and working tree as it was.
//
// Layout, for bead ID in the repository whose top level is TOP:
//
//	TOP/.worktrees/ID/                       the worktree, on branch vibeteam/ID
//	COMMON/vibeteam/worktrees/ID.json        who owns it (see Owner)
//	COMMON/vibeteam/worktrees/ID.lock        flock held while the bead's worktree is made, committed to or removed
//	COMMON/vibeteam.lock                     flock held around changes to shared state (base branches, owner records)
//	COMMON/vibeteam-merge.lock               the merge queue's flock
//	COMMON/info/exclude                      keeps .worktrees/ and .vibeteam/ out of git status
//
// where COMMON is the repository's common git directory (.git of the main
// checkout, shared by all its worktrees).
package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Names vibeteam uses in a repository.
const (
	// WorktreesDir is where the bead worktrees live, under the top level.
	WorktreesDir = ".worktrees"
	// BranchPrefix is the prefix of a bead's branch: vibeteam/<bead-id>.
	BranchPrefix = "vibeteam/"
)

// DefaultExcludes are the patterns Ensure adds to info/exclude: the bead
// worktrees and vibeteam's own state, at the top level of each checkout.
var DefaultExcludes = []string{"/" + WorktreesDir + "/", "/.vibeteam/"}

// Repo is a git repository seen from one of its checkouts.
type Repo struct {
	// Top is the top level of the checkout the repository was opened
	// from (the base checkout); bead worktrees go in Top/.worktrees.
	Top string
	// CommonDir is the git directory shared by all the repository's
	// worktrees (absolute).
	CommonDir string
}

// Open finds the repository dir is in. It is an error when dir is not in a
// git working tree (a bare repository has none).
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	out, err := git(ctx, abs, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git working tree: %w", abs, err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 2 || lines[0] == "" || lines[1] == "" {
		return nil, fmt.Errorf("%s is not in a git working tree (git rev-parse said %q)", abs, out)
	}
	return &Repo{Top: filepath.Clean(lines[0]), CommonDir: filepath.Clean(lines[1])}, nil
}

// mergeTreeOK caches a git found new enough for merge-tree --write-tree
// (one git binary per process).
var (
	versionMu   sync.Mutex
	mergeTreeOK bool
)

// checkMergeTree makes sure this git has merge-tree --write-tree.
func (r *Repo) checkMergeTree(ctx context.Context) error {
	versionMu.Lock()
	defer versionMu.Unlock()
	if mergeTreeOK {
		return nil
	}
	out, err := git(ctx, r.Top, "version")
	if err != nil {
		return err
	}
	if major, minor, ok := gitVersion(out); ok && (major < minMergeTree[0] || major == minMergeTree[0] && minor < minMergeTree[1]) {
		return fmt.Errorf("merging a worktree needs git %d.%d or newer (git merge-tree --write-tree); this is %s",
			minMergeTree[0], minMergeTree[1], strings.TrimSpace(out))
	}
	// An unknown version format: let git say what it lacks, if anything.
	mergeTreeOK = true
	return nil
}

// CurrentBranch is the branch checked out in Top, the default base branch.
// A detached HEAD is an error that asks for an explicit base.
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	ref, err := headRef(ctx, r.Top)
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("HEAD is detached in %s, so there is no current branch to merge into: name the base branch with --base BRANCH", r.Top)
		}
		return "", err
	}
	name, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok {
		return "", fmt.Errorf("HEAD in %s is %s, not a branch: name the base branch with --base BRANCH", r.Top, ref)
	}
	return name, nil
}

// Exclude adds patterns to the repository's info/exclude (in the common git
// directory, so it applies to every worktree), each at most once, keeping
// the lines already there. The user's .gitignore is never touched.
func (r *Repo) Exclude(ctx context.Context, patterns ...string) error {
	_, unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return r.exclude(patterns...)
}

func (r *Repo) exclude(patterns ...string) error {
	path := filepath.Join(r.CommonDir, "info", "exclude")
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []byte
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" || have[p] {
			continue
		}
		have[p] = true
		add = append(add, p+"\n"...)
	}
	if len(add) == 0 {
		return nil
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		add = append([]byte("\n"), add...)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(add); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// lock serialises vibeteam's changes to the repository's shared state
// (the base branches, the worktree list, the owner records) across
// processes. It is held briefly: what takes long and concerns one bead
// only (checking out its worktree, committing its work with the hooks,
// removing it) runs under that bead's lock instead (beadLock), so it holds
// up neither the merges nor the other beads.
//
// The returned context carries the lock: the git commands that change the
// repository under it inherit it (run), so when vibeteam is killed while
// one runs, the lock stays held until that git ends, and the vibeteam that
// resumes waits for it rather than working beside it.
func (r *Repo) lock(ctx context.Context) (context.Context, func(), error) {
	return holdLock(ctx, filepath.Join(r.CommonDir, "vibeteam.lock"))
}

// beadLock serialises the changes to one bead's worktree, branch and owner
// record across processes: COMMON/vibeteam/worktrees/ID.lock, beside the
// owner record. Like lock, it is inherited by the git commands run under
// it. The file stays when the bead's worktree goes: removing a lock file
// others may be waiting on would let two of them hold it at once.
func (r *Repo) beadLock(ctx context.Context, beadID string) (context.Context, func(), error) {
	dir := filepath.Join(r.CommonDir, "vibeteam", "worktrees")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ctx, nil, err
	}
	return holdLock(ctx, filepath.Join(dir, beadID+".lock"))
}

// worktreeLock is the bead's lock of wt; a worktree that is no bead's has
// one named after its branch.
func (r *Repo) worktreeLock(ctx context.Context, wt *Worktree) (context.Context, func(), error) {
	if wt.BeadID != "" && checkBeadID(wt.BeadID) == nil {
		return r.beadLock(ctx, wt.BeadID)
	}
	sum := sha256.Sum256([]byte(wt.Branch))
	return r.beadLock(ctx, ".branch-"+hex.EncodeToString(sum[:8]))
}

func holdLock(ctx context.Context, path string) (context.Context, func(), error) {
	unlock, f, err := lockFile(ctx, path)
	if err != nil {
		return ctx, nil, err
	}
	return withLock(ctx, f), unlock, nil
}

// withLock is ctx carrying the held lock f too (nil: none).
func withLock(ctx context.Context, f *os.File) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, heldLockKey{}, append(append([]*os.File(nil), heldLocks(ctx)...), f))
}

type heldLockKey struct{}

// heldLocks are the locks ctx holds (the repository's, a bead's).
func heldLocks(ctx context.Context) []*os.File {
	f, _ := ctx.Value(heldLockKey{}).([]*os.File)
	return f
}

// gitWorktree is one entry of git worktree list.
type gitWorktree struct {
	Path     string
	Head     string
	Branch   string // full ref name; "" when detached
	Bare     bool
	Prunable bool // its directory is gone
}

// worktrees lists the repository's worktrees, the main one first.
func (r *Repo) worktrees(ctx context.Context) ([]gitWorktree, error) {
	out, err := git(ctx, r.Top, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	var list []gitWorktree
	for _, f := range strings.Split(out, "\x00") {
		k, v, _ := strings.Cut(f, " ")
		switch {
		case k == "worktree":
			list = append(list, gitWorktree{Path: filepath.Clean(v)})
		case len(list) == 0:
		case k == "HEAD":
			list[len(list)-1].Head = v
		case k == "branch":
			list[len(list)-1].Branch = v
		case k == "bare":
			list[len(list)-1].Bare = true
		case k == "prunable":
			list[len(list)-1].Prunable = true
		}
	}
	return list, nil
}

// worktreesNow is worktrees for a caller that does not hold the
// repository's lock: git worktree list fails on a worktree another git is
// making or removing at that moment, and is then asked again under the
// lock, once they are done.
func (r *Repo) worktreesNow(ctx context.Context) ([]gitWorktree, error) {
	if list, err := r.worktrees(ctx); err == nil {
		return list, nil
	}
	ctx, unlock, err := r.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return r.worktrees(ctx)
}

// samePath compares two paths as the file system would (symbolic links
// resolved where they exist).
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return canonParent(a) == canonParent(b)
	}
	return ra == rb
}

// canonParent resolves the links of a path's parent, for a path that may
// not exist itself.
func canonParent(p string) string {
	p = filepath.Clean(p)
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return p
	}
	return filepath.Join(dir, filepath.Base(p))
}

func findPath(list []gitWorktree, path string) *gitWorktree {
	for i := range list {
		if samePath(list[i].Path, path) {
			return &list[i]
		}
	}
	return nil
}

func findBranch(list []gitWorktree, ref string) []gitWorktree {
	var found []gitWorktree
	for _, w := range list {
		if w.Branch == ref {
			found = append(found, w)
		}
	}
	return found
}

// busy says why branch (a full ref) cannot be moved now: it is being
// rebased or bisected in one of the worktrees (git worktree list shows
// those as detached). "" when it is not.
func (r *Repo) busy(ref string) string {
	dirs := []string{r.CommonDir}
	if more, err := filepath.Glob(filepath.Join(r.CommonDir, "worktrees", "*")); err == nil {
		dirs = append(dirs, more...)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	for _, d := range dirs {
		where := filepath.Dir(r.CommonDir) // the main worktree
		if d != r.CommonDir {
			// <admin>/gitdir holds the path of the worktree's .git file.
			if g := read(filepath.Join(d, "gitdir")); g != "" {
				where = filepath.Dir(g)
			}
		}
		for _, f := range []string{"rebase-merge/head-name", "rebase-apply/head-name"} {
			if read(filepath.Join(d, f)) == ref {
				return fmt.Sprintf("branch %s is being rebased in %s: finish or abort the rebase first", strings.TrimPrefix(ref, "refs/heads/"), where)
			}
		}
		if b := read(filepath.Join(d, "BISECT_START")); b != "" && "refs/heads/"+b == ref {
			return fmt.Sprintf("branch %s is being bisected in %s: end it with git bisect reset first", b, where)
		}
	}
	return ""
}
