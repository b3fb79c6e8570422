package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Remove deletes the bead's worktree, its branch and its owner record.
// Without force it refuses, removing nothing, when the branch has commits
// the base branch does not have, and git refuses to remove a worktree with
// uncommitted changes or untracked files; with force both go. A worktree
// or branch another session owns is never removed. What is already gone
// is skipped, so Remove can be called again after a partial failure.
func (r *Repo) Remove(ctx context.Context, wt *Worktree, force bool) error {
	if wt == nil || wt.Branch == "" || wt.Path == "" {
		return errors.New("no worktree")
	}
	// Under the bead's lock: a removal a killed vibeteam left running ends
	// before a resumed one goes on.
	ctx, unlock, err := r.worktreeLock(ctx, wt)
	if err != nil {
		return err
	}
	defer unlock()

	if wt.BeadID != "" {
		owner, err := r.Owner(wt.BeadID)
		if err != nil {
			return err
		}
		if owner != nil && owner.Session != wt.Session {
			return &OwnedError{BeadID: wt.BeadID, Path: owner.Path, Branch: owner.Branch, Session: owner.Session}
		}
	}
	ref := "refs/heads/" + wt.Branch
	tip, branchExists, err := revParse(ctx, r.Top, ref)
	if err != nil {
		return err
	}
	if branchExists && !force {
		if err := r.refuseUnmerged(ctx, wt, tip); err != nil {
			return err
		}
	}

	at, err := r.removableAt(ctx, wt, ref, force)
	if err != nil {
		return err
	}
	// The changes under the repository's lock as well: git worktree remove
	// reads every worktree's administrative files (see addWorktree), and
	// the .worktrees directory must not go while another worktree is being
	// made in it.
	ctx, unlockRepo, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlockRepo()
	if at != nil {
		args := []string{"worktree", "remove"}
		if force {
			args = append(args, "--force")
		}
		if _, err := run(ctx, cmd{dir: r.Top, args: append(args, "--", at.Path), keep: true}); err != nil {
			return err
		}
	}
	if branchExists {
		// Only if it is still where it was checked.
		if _, err := run(ctx, cmd{dir: r.Top, args: []string{"update-ref", "-m", "vibeteam: remove " + wt.Branch, "-d", ref, tip}, keep: true}); err != nil {
			return err
		}
	}
	if wt.BeadID != "" {
		if err := r.removeOwner(wt.BeadID); err != nil {
			return err
		}
	}
	// The .worktrees directory goes with its last worktree.
	if dir := filepath.Dir(wt.Path); filepath.Base(dir) == WorktreesDir {
		if info, err := os.Lstat(dir); err == nil && info.IsDir() {
			os.Remove(dir) // a link is not vibeteam's to remove
		}
	}
	return nil
}

// refuseUnmerged is an error when the branch (at tip) has commits its base
// branch does not have, or when that cannot be told.
func (r *Repo) refuseUnmerged(ctx context.Context, wt *Worktree, tip string) error {
	if wt.Base == "" {
		return fmt.Errorf("cannot tell whether branch %s is merged: its base branch is not known", wt.Branch)
	}
	baseRef := "refs/heads/" + wt.Base
	// Merged (the usual case) in one git; anything else is looked at more
	// closely.
	merged, err := isAncestor(ctx, r.Top, tip, baseRef)
	if err == nil && merged {
		return nil
	}
	base, ok, err := revParse(ctx, r.Top, baseRef+"^{commit}")
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("cannot tell whether branch %s is merged: base branch %s does not exist", wt.Branch, wt.Base)
	}
	if merged, err = isAncestor(ctx, r.Top, tip, base); err != nil {
		return err
	}
	if !merged {
		n, _ := git(ctx, r.Top, "rev-list", "--count", base+".."+tip)
		return fmt.Errorf("branch %s has %s commit(s) not merged into %s; nothing was removed (the worktree is %s)",
			wt.Branch, strings.TrimSpace(n), wt.Base, wt.Path)
	}
	return nil
}

// removableAt is the bead's worktree as git lists it (nil: gone), once it
// is sure the branch is checked out nowhere else and, without force, that
// the worktree is on it.
func (r *Repo) removableAt(ctx context.Context, wt *Worktree, ref string, force bool) (*gitWorktree, error) {
	list, err := r.worktreesNow(ctx)
	if err != nil {
		return nil, err
	}
	at := findPath(list, wt.Path)
	for _, w := range findBranch(list, ref) {
		if at == nil || w.Path != at.Path {
			return nil, fmt.Errorf("branch %s is checked out in %s, not in the bead's worktree %s: nothing was removed", wt.Branch, w.Path, wt.Path)
		}
	}
	if at != nil && at.Branch != ref && !force {
		return nil, fmt.Errorf("the worktree %s is not on branch %s: nothing was removed", wt.Path, wt.Branch)
	}
	return at, nil
}
