package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// CommitAll commits everything in the worktree that is not committed yet,
// tracked and untracked files alike (ignored ones stay out), with message,
// and reports whether it made a commit: a clean worktree is left alone.
// Commits the agents made themselves are kept as they are. When no git
// identity is configured the commit is made as vibeteam <vibeteam@localhost>.
//
// It refuses, changing nothing, when the worktree is not on its branch (a
// rebase in progress, say) or has unresolved conflicts.
func (r *Repo) CommitAll(ctx context.Context, wt *Worktree, message string) (bool, error) {
	if strings.TrimSpace(message) == "" {
		return false, errors.New("a commit needs a message")
	}
	// Under the repository lock, as every change vibeteam makes: a commit
	// that a killed vibeteam left running ends before a resumed one goes on.
	ctx, unlock, err := r.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	if err := r.onBranch(ctx, wt); err != nil {
		return false, err
	}
	unmerged, err := git(ctx, wt.Path, "ls-files", "--unmerged", "-z")
	if err != nil {
		return false, err
	}
	if unmerged != "" {
		var paths []string
		seen := map[string]bool{}
		for _, rec := range strings.Split(unmerged, "\x00") {
			if _, p, ok := strings.Cut(rec, "\t"); ok && !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
		return false, fmt.Errorf("the worktree %s has unresolved conflicts in %s: resolve them (edit, git add) before its work is committed",
			wt.Path, strings.Join(paths, ", "))
	}
	if _, err := run(ctx, cmd{dir: wt.Path, args: []string{"add", "--all"}, keep: true}); err != nil {
		return false, err
	}
	_, err = git(ctx, wt.Path, "diff", "--cached", "--quiet", "HEAD", "--")
	switch {
	case err == nil:
		// Nothing staged; a merge the agent concluded by hand (MERGE_HEAD)
		// still needs its commit.
		if _, merging, err := revParse(ctx, wt.Path, "MERGE_HEAD"); err != nil || !merging {
			return false, err
		}
	case exitCode(err) != 1:
		return false, err
	}
	id, err := identity(ctx, wt.Path)
	if err != nil {
		return false, err
	}
	args := append(id, "commit", "--quiet", "--file=-")
	if _, err := run(ctx, cmd{dir: wt.Path, args: args, stdin: message, keep: true, hooks: true}); err != nil {
		return false, err
	}
	return true, nil
}

// onBranch checks that the worktree exists and has its branch checked out.
func (r *Repo) onBranch(ctx context.Context, wt *Worktree) error {
	if wt == nil || wt.Path == "" || wt.Branch == "" {
		return errors.New("no worktree")
	}
	out, err := git(ctx, wt.Path, "symbolic-ref", "--quiet", "HEAD")
	if err != nil {
		if exitCode(err) == 1 {
			return fmt.Errorf("the worktree %s is not on its branch %s (HEAD is detached: a rebase in progress?)", wt.Path, wt.Branch)
		}
		return err
	}
	if ref := strings.TrimSpace(out); ref != "refs/heads/"+wt.Branch {
		return fmt.Errorf("the worktree %s is on %s, not on its branch %s", wt.Path, strings.TrimPrefix(ref, "refs/heads/"), wt.Branch)
	}
	return nil
}

// Summary is what a person reviews before the merge: the diff stat of the
// branch against the base (since they forked: git diff --stat
// base...branch) and its commits (git log --oneline base..branch). Only
// committed work is shown; CommitAll first.
func (r *Repo) Summary(ctx context.Context, wt *Worktree) (stat, commits string, err error) {
	if wt == nil || wt.Branch == "" || wt.Base == "" {
		return "", "", errors.New("no worktree")
	}
	base, branch := "refs/heads/"+wt.Base, "refs/heads/"+wt.Branch
	for _, ref := range []string{base, branch} {
		if _, ok, err := revParse(ctx, r.Top, ref+"^{commit}"); err != nil {
			return "", "", err
		} else if !ok {
			return "", "", fmt.Errorf("branch %s does not exist", strings.TrimPrefix(ref, "refs/heads/"))
		}
	}
	stat, err = git(ctx, r.Top, "diff", "--stat", "--no-color", "--no-ext-diff", base+"..."+branch, "--")
	if err != nil {
		return "", "", err
	}
	commits, err = git(ctx, r.Top, "log", "--oneline", "--no-color", "--no-decorate", base+".."+branch, "--")
	if err != nil {
		return "", "", err
	}
	return strings.TrimRight(stat, "\n"), strings.TrimRight(commits, "\n"), nil
}
