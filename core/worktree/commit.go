package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	if wt == nil || wt.Path == "" || wt.Branch == "" {
		return false, errors.New("no worktree")
	}
	// Under the bead's lock: a commit that a killed vibeteam left running
	// ends before a resumed one goes on, and a slow commit hook holds up
	// neither the merges nor the other beads.
	ctx, unlock, err := r.worktreeLock(ctx, wt)
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
	// What the commit hooks of an earlier commit left (and no step has
	// touched since) is not the steps' work.
	hookFiles, err := r.hookFiles(ctx, wt)
	if err != nil {
		return false, err
	}
	add := []string{"add", "--all", "--", "."}
	for _, p := range hookFiles {
		add = append(add, ":(exclude,literal)"+p)
	}
	if _, err := run(ctx, cmd{dir: wt.Path, args: add, keep: true}); err != nil {
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
	// Everything was staged: a file untracked now was made by the hooks.
	if err := r.noteHookFiles(ctx, wt); err != nil {
		return true, err
	}
	return true, nil
}

// hookFilesName is the file, in the worktree's own git directory, that
// lists the files the commit hooks made: "hash path" lines.
const hookFilesName = "vibeteam-hook-files"

func (r *Repo) hookFilesPath(ctx context.Context, wt *Worktree) (string, error) {
	if dir := linkedGitDir(wt.Path); dir != "" {
		return filepath.Join(dir, hookFilesName), nil
	}
	out, err := git(ctx, wt.Path, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return "", err
	}
	return filepath.Join(strings.TrimSpace(out), hookFilesName), nil
}

// linkedGitDir is the git directory of the linked worktree at path, read
// from its .git file ("gitdir: DIR") as git reads it; "" when path is not
// plainly one (git is asked then).
func linkedGitDir(path string) string {
	b, err := os.ReadFile(filepath.Join(path, ".git"))
	if err != nil {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !ok || dir == "" || strings.ContainsAny(dir, "\n") {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(path, dir)
	}
	if info, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil || info.IsDir() {
		return ""
	}
	return filepath.Clean(dir)
}

// noteHookFiles records the untracked files the commit's hooks left, with
// their content, so that later commits leave them out.
func (r *Repo) noteHookFiles(ctx context.Context, wt *Worktree) error {
	out, err := git(ctx, wt.Path, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil || out == "" {
		return err
	}
	paths := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	hashes, err := run(ctx, cmd{dir: wt.Path, args: []string{"hash-object", "--stdin-paths"}, stdin: strings.Join(paths, "\n") + "\n"})
	if err != nil {
		return err
	}
	path, err := r.hookFilesPath(ctx, wt)
	if err != nil {
		return err
	}
	var b strings.Builder
	for i, h := range strings.Fields(hashes) {
		if i < len(paths) {
			b.WriteString(h + " " + paths[i] + "\n")
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(b.String())
	return errors.Join(werr, f.Close())
}

// hookFiles are the files commit hooks made that are still as they made
// them: a step that changed one since makes it its own work.
func (r *Repo) hookFiles(ctx context.Context, wt *Worktree) ([]string, error) {
	path, err := r.hookFilesPath(ctx, wt)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	made := map[string]string{}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		h, p, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if _, seen := made[p]; !seen {
			paths = append(paths, p)
		}
		made[p] = h
	}
	var keep []string
	var exist []string
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(wt.Path, p)); err == nil {
			exist = append(exist, p)
		}
	}
	if len(exist) == 0 {
		return nil, nil
	}
	hashes, err := run(ctx, cmd{dir: wt.Path, args: []string{"hash-object", "--stdin-paths"}, stdin: strings.Join(exist, "\n") + "\n"})
	if err != nil {
		return nil, err
	}
	for i, h := range strings.Fields(hashes) {
		if i < len(exist) && made[exist[i]] == h {
			keep = append(keep, exist[i])
		}
	}
	return keep, nil
}

// onBranch checks that the worktree exists and has its branch checked out.
func (r *Repo) onBranch(ctx context.Context, wt *Worktree) error {
	if wt == nil || wt.Path == "" || wt.Branch == "" {
		return errors.New("no worktree")
	}
	ref, err := headRef(ctx, wt.Path)
	if err != nil {
		if exitCode(err) == 1 {
			return fmt.Errorf("the worktree %s is not on its branch %s (HEAD is detached: a rebase in progress?)", wt.Path, wt.Branch)
		}
		return err
	}
	if ref != "refs/heads/"+wt.Branch {
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
