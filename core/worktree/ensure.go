package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Worktree is a bead's worktree: where its steps run, its branch and the
// base branch it merges back into.
type Worktree struct {
	Path    string // absolute
	Branch  string // vibeteam/<bead-id>
	Base    string // a local branch name, without refs/heads/
	BeadID  string
	Session string // the vibeteam session that owns it
}

// Owner is the record of which session owns a bead's worktree and branch.
// It is the file <common-git-dir>/vibeteam/worktrees/<bead-id>.json: in the
// common git directory, so every checkout of the repository sees it, out of
// every working tree, and removed together with the worktree and branch.
type Owner struct {
	Session string    `json:"session"`
	Branch  string    `json:"branch"`
	Base    string    `json:"base"`
	Path    string    `json:"path"`
	Created time.Time `json:"created"`
}

// OwnedError is a bead whose worktree or branch belongs to another session.
type OwnedError struct {
	BeadID, Path, Branch, Session string
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("bead %s already has a worktree %s (branch %s) owned by session %s; nothing was changed. "+
		"Continue that session with: vibeteam resume %s, or discard its work with: vibeteam cancel %s --clean",
		e.BeadID, e.Path, e.Branch, e.Session, e.Session, e.Session)
}

// LeftoverError is a worktree or branch for the bead that no vibeteam
// session owns (made by hand, or left by a crash or an older vibeteam).
type LeftoverError struct {
	BeadID string
	// What is there: the worktree directory, a registered worktree on the
	// bead's branch (possibly elsewhere), the branch.
	Path, Branch string
	Worktrees    []string
	BranchExists bool
}

func (e *LeftoverError) Error() string {
	var have, fix []string
	if e.Path != "" {
		have = append(have, "directory "+e.Path)
	}
	for _, w := range e.Worktrees {
		if e.Path != w {
			have = append(have, "worktree "+w)
		}
		fix = append(fix, "git worktree remove "+shellQuote(w))
	}
	if e.Path != "" && len(e.Worktrees) == 0 {
		fix = append(fix, "move or delete "+shellQuote(e.Path))
	}
	if e.BranchExists {
		have = append(have, "branch "+e.Branch)
		fix = append(fix, "git branch -D "+shellQuote(e.Branch))
	}
	return fmt.Sprintf("bead %s has a leftover %s that no vibeteam session owns; nothing was changed. "+
		"Look at it, and if its work is not needed: %s",
		e.BeadID, strings.Join(have, " and "), strings.Join(fix, " && "))
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+:@", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkBeadID rejects an id that cannot be one path component and one
// branch name component (ids are sanitised by the caller; this is the
// last line of defence). The branch rules are git check-ref-format's for
// one component, checked here so that no git runs for it.
func checkBeadID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\\\x00") {
		return fmt.Errorf("bead id %q cannot name a worktree", id)
	}
	if why := refComponentProblem(id); why != "" {
		return fmt.Errorf("bead id %q cannot name a branch: %s", id, why)
	}
	return nil
}

// refComponentProblem says why s cannot be one component of a ref name
// (git help check-ref-format), "" when it can.
func refComponentProblem(s string) string {
	switch {
	case strings.HasPrefix(s, "."):
		return "it starts with a dot"
	case strings.HasSuffix(s, "."):
		return "it ends with a dot"
	case strings.HasSuffix(s, ".lock"):
		return "it ends with .lock"
	case strings.Contains(s, ".."):
		return "it holds two dots in a row"
	case strings.Contains(s, "@{"):
		return "it holds @{"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Sprintf("it holds %q", c)
		}
	}
	return ""
}

func (r *Repo) ownerPath(beadID string) string {
	return filepath.Join(r.CommonDir, "vibeteam", "worktrees", beadID+".json")
}

// Owner returns the owner record of a bead's worktree, nil when there is
// none.
func (r *Repo) Owner(beadID string) (*Owner, error) {
	if beadID == "" || strings.ContainsAny(beadID, "/\\") {
		return nil, fmt.Errorf("bead id %q cannot name a worktree", beadID)
	}
	b, err := os.ReadFile(r.ownerPath(beadID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var o Owner
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("read the owner of bead %s's worktree (%s): %w", beadID, r.ownerPath(beadID), err)
	}
	return &o, nil
}

// writeOwner writes the record atomically (a new file renamed over).
func (r *Repo) writeOwner(beadID string, o Owner) error {
	path := r.ownerPath(beadID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+beadID+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(append(b, '\n'))
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

func (r *Repo) removeOwner(beadID string) error {
	err := os.Remove(r.ownerPath(beadID))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// baseBranch checks that base names a local branch with a commit and
// returns its name (refs/heads/ stripped) and commit.
func (r *Repo) baseBranch(ctx context.Context, base string) (string, string, error) {
	name := strings.TrimPrefix(base, "refs/heads/")
	id, ok, err := revParse(ctx, r.Top, "refs/heads/"+name+"^{commit}")
	if err != nil {
		return "", "", err
	}
	if !ok {
		if _, exists, _ := revParse(ctx, r.Top, "refs/heads/"+name); exists {
			return "", "", fmt.Errorf("base branch %s has no commit", name)
		}
		return "", "", fmt.Errorf("base branch %s does not exist (a local branch is needed)", name)
	}
	return name, id, nil
}

// Ensure returns the bead's worktree, creating it when the bead has none:
// Top/.worktrees/<bead-id> on a new branch vibeteam/<bead-id> started at
// the base branch's HEAD. base "" is the current branch of Top; an explicit
// base must be an existing local branch.
//
// A worktree the same session created before is reused (created is false),
// as is its branch when the worktree directory is gone; its base stays the
// one recorded. A worktree or branch owned by another session is an
// *OwnedError, one owned by nobody a *LeftoverError; neither is touched.
// Ensure also keeps .worktrees/ and .vibeteam/ out of git status (Exclude).
func (r *Repo) Ensure(ctx context.Context, beadID, base, session string) (*Worktree, bool, error) {
	if session == "" {
		return nil, false, errors.New("a worktree needs the session that owns it")
	}
	if err := checkBeadID(beadID); err != nil {
		return nil, false, err
	}
	ctx, unlock, err := r.beadLock(ctx, beadID)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	// What is there of this bead's is only ever changed under its lock:
	// what to do is decided under that one.
	wt, created, add, err := r.plan(ctx, beadID, base, session)
	if err != nil || add == nil {
		return wt, created, err
	}
	if err := r.addWorktree(ctx, add); err != nil {
		if created {
			r.removeOwner(beadID)
		}
		return nil, false, err
	}
	return wt, created, nil
}

// addWorktree runs git worktree add under the repository's lock: git
// worktree add, list and remove read every worktree's administrative files,
// and fail on one that another git is making or removing at that moment.
func (r *Repo) addWorktree(ctx context.Context, args []string) error {
	ctx, unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := r.exclude(DefaultExcludes...); err != nil {
		return err
	}
	if info, err := os.Lstat(filepath.Join(r.Top, WorktreesDir)); err == nil && info.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(filepath.Join(r.Top, WorktreesDir))
		return fmt.Errorf("%s is a symbolic link (to %s): vibeteam does not make or remove worktrees through one; make it a directory", filepath.Join(r.Top, WorktreesDir), target)
	}
	_, err = run(ctx, cmd{dir: r.Top, args: args, keep: true})
	return err
}

// plan decides what Ensure does: the worktree, whether it is new (its
// owner record is then written), and the git worktree add that makes it
// (nil when it is there already).
func (r *Repo) plan(ctx context.Context, beadID, base, session string) (*Worktree, bool, []string, error) {
	if info, err := os.Lstat(filepath.Join(r.Top, WorktreesDir)); err == nil && info.Mode()&os.ModeSymlink != 0 {
		// Worktrees are made and removed there: never through a link to a
		// place vibeteam did not make.
		target, _ := os.Readlink(filepath.Join(r.Top, WorktreesDir))
		return nil, false, nil, fmt.Errorf("%s is a symbolic link (to %s): vibeteam does not make or remove worktrees through one; make it a directory", filepath.Join(r.Top, WorktreesDir), target)
	}
	f, err := r.survey(ctx, beadID)
	if err != nil {
		return nil, false, nil, err
	}
	if f.owner != nil && f.owner.Session != session {
		if f.anything {
			return nil, false, nil, &OwnedError{BeadID: beadID, Path: f.path, Branch: f.branch, Session: f.owner.Session}
		}
		// A record with neither worktree nor branch (a run killed between
		// the two): there is no work to lose, the bead is free.
		f.owner = nil
		f.path = filepath.Join(r.Top, WorktreesDir, beadID)
		f.atPath = findPath(f.list, f.path)
		_, statErr := os.Lstat(f.path)
		f.pathExists = statErr == nil
		f.anything = f.pathExists || f.atPath != nil
	}
	if f.owner == nil {
		return r.planNew(ctx, f, base, session)
	}
	return r.planOwn(ctx, f, base, session)
}

// beadWorktree is what is there of a bead's worktree: its owner record,
// where it is or would be, git's worktrees at that path and on its branch,
// and whether the branch and the path exist.
type beadWorktree struct {
	beadID, branch, ref, path string
	owner                     *Owner
	list                      []gitWorktree
	atPath                    *gitWorktree
	onBranch                  []gitWorktree
	branchExists, pathExists  bool
	anything                  bool // any of them is there
}

// survey looks at what is there of the bead's worktree.
func (r *Repo) survey(ctx context.Context, beadID string) (*beadWorktree, error) {
	f := &beadWorktree{beadID: beadID, branch: BranchPrefix + beadID}
	f.ref = "refs/heads/" + f.branch
	var err error
	if f.owner, err = r.Owner(beadID); err != nil {
		return nil, err
	}
	f.path = filepath.Join(r.Top, WorktreesDir, beadID)
	if f.owner != nil && f.owner.Path != "" {
		f.path = f.owner.Path
	}
	if f.list, err = r.worktreesNow(ctx); err != nil {
		return nil, err
	}
	f.atPath = findPath(f.list, f.path)
	f.onBranch = findBranch(f.list, f.ref)
	if _, f.branchExists, err = revParse(ctx, r.Top, f.ref); err != nil {
		return nil, err
	}
	_, statErr := os.Lstat(f.path)
	f.pathExists = statErr == nil
	f.anything = f.branchExists || f.pathExists || f.atPath != nil || len(f.onBranch) > 0
	return f, nil
}

// planNew is plan for a bead no session owns: a new worktree on a new
// branch from base, unless something of an old one is left.
func (r *Repo) planNew(ctx context.Context, f *beadWorktree, base, session string) (*Worktree, bool, []string, error) {
	if f.anything {
		e := &LeftoverError{BeadID: f.beadID, Branch: f.branch, BranchExists: f.branchExists}
		if f.pathExists {
			e.Path = f.path
		}
		if f.atPath != nil {
			e.Worktrees = append(e.Worktrees, f.atPath.Path)
		}
		for _, w := range f.onBranch {
			if f.atPath == nil || w.Path != f.atPath.Path {
				e.Worktrees = append(e.Worktrees, w.Path)
			}
		}
		return nil, false, nil, e
	}
	if base == "" {
		var err error
		if base, err = r.CurrentBranch(ctx); err != nil {
			return nil, false, nil, err
		}
	}
	name, start, err := r.baseBranch(ctx, base)
	if err != nil {
		return nil, false, nil, err
	}
	wt := &Worktree{Path: f.path, Branch: f.branch, Base: name, BeadID: f.beadID, Session: session}
	add, err := r.create(wt, start)
	if err != nil {
		return nil, false, nil, err
	}
	return wt, true, add, nil
}

// planOwn is plan for the session's own worktree: there already, its
// branch checked out again, or made now.
func (r *Repo) planOwn(ctx context.Context, f *beadWorktree, base, session string) (*Worktree, bool, []string, error) {
	owner, path, branch, beadID := f.owner, f.path, f.branch, f.beadID
	if base != "" && strings.TrimPrefix(base, "refs/heads/") != owner.Base {
		return nil, false, nil, fmt.Errorf("the worktree %s of bead %s merges into %s, not %s: it was created from %s by session %s",
			path, beadID, owner.Base, base, owner.Base, session)
	}
	wt := &Worktree{Path: path, Branch: branch, Base: owner.Base, BeadID: beadID, Session: session}
	switch {
	case f.atPath != nil && !f.atPath.Prunable && f.pathExists:
		if f.atPath.Branch != f.ref {
			on := "a detached HEAD"
			if f.atPath.Branch != "" {
				on = "branch " + strings.TrimPrefix(f.atPath.Branch, "refs/heads/")
			}
			return nil, false, nil, fmt.Errorf("the worktree %s of bead %s is on %s, not on its branch %s: check out %s there (git -C %s switch %s)",
				path, beadID, on, branch, branch, shellQuote(path), shellQuote(branch))
		}
		return wt, false, nil, nil
	case f.branchExists:
		// The directory is gone (removed by hand); the work is on the
		// branch: check it out again.
		add, err := f.checkoutAgain()
		if err != nil {
			return nil, false, nil, err
		}
		return wt, false, add, nil
	case !f.pathExists && f.atPath == nil:
		// The record was written but the worktree never made (a run
		// killed in between): make it now.
		_, start, err := r.baseBranch(ctx, owner.Base)
		if err != nil {
			return nil, false, nil, err
		}
		add, err := r.create(wt, start)
		if err != nil {
			return nil, false, nil, err
		}
		return wt, true, add, nil
	}
	return nil, false, nil, fmt.Errorf("the worktree %s of bead %s is there but its branch %s is gone; nothing was changed: look at it, then remove it (git worktree remove %s) to start again",
		path, beadID, branch, shellQuote(path))
}

// checkoutAgain is the git worktree add that checks the bead's branch out
// again where its directory was.
func (f *beadWorktree) checkoutAgain() ([]string, error) {
	if f.pathExists {
		return nil, fmt.Errorf("%s exists but is not a worktree of this repository: move it away so the worktree of bead %s can be checked out there again", f.path, f.beadID)
	}
	for _, w := range f.onBranch {
		if f.atPath == nil || w.Path != f.atPath.Path {
			return nil, fmt.Errorf("branch %s of bead %s is checked out in %s: remove that worktree or switch it to another branch", f.branch, f.beadID, w.Path)
		}
	}
	args := []string{"worktree", "add"}
	if f.atPath != nil {
		args = append(args, "--force") // registered, its directory gone
	}
	return append(args, "--", f.path, f.branch), nil
}

// create records the owner and returns the git worktree add that makes the
// worktree on a new branch at start; the record goes first so that a
// worktree never exists without one. A failed add removes the record again
// (Ensure).
func (r *Repo) create(wt *Worktree, start string) ([]string, error) {
	if err := r.writeOwner(wt.BeadID, Owner{Session: wt.Session, Branch: wt.Branch, Base: wt.Base, Path: wt.Path, Created: time.Now().UTC()}); err != nil {
		return nil, err
	}
	return []string{"worktree", "add", "--no-track", "-b", wt.Branch, "--", wt.Path, start}, nil
}
