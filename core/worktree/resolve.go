package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// BaseMerge is how a merge of the base branch into a worktree's branch, in
// the worktree, went: clean (Commit, the merge commit on the branch), or
// conflicting (Conflicts; the worktree is left in the middle of the merge,
// conflict markers in its files, for someone to resolve). Binary lists the
// conflicting files that are binary, which no marker can show. Ours and
// Theirs are the branch's and the base's commits since they diverged.
type BaseMerge struct {
	Commit       string
	Conflicts    []Conflict
	Binary       []string
	Ours, Theirs string
}

// Bounds of the commit lists a resolution is shown.
const (
	sideCommits   = 20
	maxSideBytes  = 8000
	binarySniffed = 8000 // as git: a NUL in the first 8000 bytes is binary
)

// MergeBaseIn merges the worktree's base branch into its branch, in the
// worktree (git merge --no-ff), with message. A clean merge is committed;
// a conflicting one is left in progress (MERGE_HEAD) for ConcludeMerge or
// AbortMerge. The worktree must have no uncommitted change.
func (r *Repo) MergeBaseIn(ctx context.Context, wt *Worktree, message string) (BaseMerge, error) {
	var res BaseMerge
	if strings.TrimSpace(message) == "" {
		return res, errors.New("a merge needs a message")
	}
	ctx, unlock, err := r.worktreeLock(ctx, wt)
	if err != nil {
		return res, err
	}
	defer unlock()
	if err := r.onBranch(ctx, wt); err != nil {
		return res, err
	}
	if _, merging, err := revParse(ctx, wt.Path, "MERGE_HEAD"); err != nil || merging {
		if err == nil {
			err = fmt.Errorf("the worktree %s is in the middle of a merge already", wt.Path)
		}
		return res, err
	}
	id, err := identity(ctx, wt.Path)
	if err != nil {
		return res, err
	}
	baseRef := "refs/heads/" + wt.Base
	args := append(id, "merge", "--no-ff", "--no-edit", "--no-autostash", "--quiet", "-m", message, baseRef)
	_, mergeErr := run(ctx, cmd{dir: wt.Path, args: args, keep: true})
	if mergeErr == nil {
		head, _, err := revParse(ctx, wt.Path, "HEAD")
		res.Commit = head
		return res, err
	}
	paths, err := unmergedPaths(ctx, wt.Path)
	if err != nil {
		return res, err
	}
	if len(paths) == 0 {
		// git refused before merging (an untracked file in the way...):
		// nothing was changed.
		return res, fmt.Errorf("merge %s into %s in %s: %w", wt.Base, wt.Branch, wt.Path, mergeErr)
	}
	res.Ours = sideLog(ctx, wt.Path, "MERGE_HEAD..HEAD")
	res.Theirs = sideLog(ctx, wt.Path, "HEAD..MERGE_HEAD")
	budget := maxConflictBytes
	for _, p := range paths {
		c := Conflict{Path: p}
		if isBinaryConflict(ctx, wt.Path, p) {
			res.Binary = append(res.Binary, p)
			c.Message = "binary file: no conflict markers can show it"
		} else if data, err := os.ReadFile(filepath.Join(wt.Path, p)); err == nil && budget > 0 {
			c.Hunks = hunks(string(data), "HEAD", baseRef, wt.Branch, wt.Base)
		} else if err != nil {
			c.Message = "deleted on one side, changed on the other"
		}
		if c.Hunks == "" {
			c.Hunks = c.Message
		}
		budget -= len(c.Hunks)
		res.Conflicts = append(res.Conflicts, c)
	}
	return res, nil
}

// InMerge reports whether the worktree is in the middle of a merge.
func (r *Repo) InMerge(ctx context.Context, wt *Worktree) (bool, error) {
	_, merging, err := revParse(ctx, wt.Path, "MERGE_HEAD")
	return merging, err
}

// AbortMerge abandons the merge in progress in the worktree (git merge
// --abort): the branch and its files are as before it began.
func (r *Repo) AbortMerge(ctx context.Context, wt *Worktree) error {
	ctx, unlock, err := r.worktreeLock(ctx, wt)
	if err != nil {
		return err
	}
	defer unlock()
	if merging, err := r.InMerge(ctx, wt); err != nil || !merging {
		return err
	}
	_, err = run(ctx, cmd{dir: wt.Path, args: []string{"merge", "--abort"}, keep: true})
	return err
}

// ConcludeMerge commits the merge in progress in the worktree once its
// conflicts are resolved, with message. It refuses, committing nothing,
// with problem saying why, when a conflicted file (paths) was deleted or
// still has a conflict marker, or when a file the merge changed has
// markers that neither side had. A merge someone committed already (the
// branch has the base, no marker left) is taken as it is.
func (r *Repo) ConcludeMerge(ctx context.Context, wt *Worktree, paths []string, message string) (commit, problem string, err error) {
	ctx, unlock, err := r.worktreeLock(ctx, wt)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	merging, err := r.InMerge(ctx, wt)
	if err != nil {
		return "", "", err
	}
	theirs := "MERGE_HEAD"
	if !merging {
		theirs = "refs/heads/" + wt.Base
		head, _, err := revParse(ctx, wt.Path, "HEAD")
		if err != nil {
			return "", "", err
		}
		if has, err := isAncestor(ctx, wt.Path, theirs, head); err != nil || !has {
			return "", "the merge was abandoned: the worktree is no longer merging " + wt.Base, err
		}
	}
	if merging {
		// The files git still has unmerged are conflicted too (paths may
		// not be known: a merge a person is finishing).
		unmerged, err := unmergedPaths(ctx, wt.Path)
		if err != nil {
			return "", "", err
		}
		for _, p := range unmerged {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(wt.Path, p)); errors.Is(err, os.ErrNotExist) {
			return "", fmt.Sprintf("%s, a conflicted file, was deleted: deleting a file does not resolve its conflict", p), nil
		}
	}
	if why, err := r.markersLeft(ctx, wt, paths, theirs); err != nil || why != "" {
		return "", why, err
	}
	if !merging {
		head, _, err := revParse(ctx, wt.Path, "HEAD")
		return head, "", err
	}
	if _, err := run(ctx, cmd{dir: wt.Path, args: []string{"add", "--all", "--", "."}, keep: true}); err != nil {
		return "", "", err
	}
	id, err := identity(ctx, wt.Path)
	if err != nil {
		return "", "", err
	}
	if _, err := run(ctx, cmd{dir: wt.Path, args: append(id, "commit", "--quiet", "--file=-"), stdin: message, keep: true}); err != nil {
		return "", "", err
	}
	head, _, err := revParse(ctx, wt.Path, "HEAD")
	return head, "", err
}

// markersLeft says which file still has a conflict marker: a conflicted
// one (paths), or any file that differs from both sides of the merge
// (theirs, and HEAD's first parent line) and has a marker neither side's
// version has.
func (r *Repo) markersLeft(ctx context.Context, wt *Worktree, paths []string, theirs string) (string, error) {
	check := map[string]bool{}
	for _, p := range paths {
		check[p] = true
	}
	fromOurs, err := git(ctx, wt.Path, "diff", "--name-only", "-z", "--no-renames", "HEAD", "--")
	if err != nil {
		return "", err
	}
	fromTheirs, err := git(ctx, wt.Path, "diff", "--name-only", "-z", "--no-renames", theirs, "--")
	if err != nil {
		return "", err
	}
	changedTheirs := map[string]bool{}
	for _, p := range strings.Split(fromTheirs, "\x00") {
		changedTheirs[p] = p != ""
	}
	var others []string
	for _, p := range strings.Split(fromOurs, "\x00") {
		if p != "" && changedTheirs[p] && !check[p] {
			others = append(others, p)
		}
	}
	for _, p := range paths {
		if line := markerLine(filepath.Join(wt.Path, p)); line > 0 {
			return fmt.Sprintf("conflict markers are left in %s (line %d)", p, line), nil
		}
	}
	for _, p := range others {
		line := markerLine(filepath.Join(wt.Path, p))
		if line == 0 {
			continue
		}
		// A marker that one side has already (a test's fixture) is not
		// the merge's.
		ours, _ := git(ctx, wt.Path, "cat-file", "-p", "HEAD:"+p)
		their, _ := git(ctx, wt.Path, "cat-file", "-p", theirs+":"+p)
		if !hasMarker(ours) && !hasMarker(their) {
			return fmt.Sprintf("conflict markers are left in %s (line %d)", p, line), nil
		}
	}
	return "", nil
}

// markerLine is the first line of the file at path that is a conflict
// marker (<<<<<<<, |||||||, >>>>>>>), 0 when none is or it cannot be read.
// ======= alone is left out: a Markdown heading underline is one too.
func markerLine(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for i, l := range strings.Split(string(data), "\n") {
		if isMarker(l) {
			return i + 1
		}
	}
	return 0
}

func hasMarker(text string) bool {
	for _, l := range strings.Split(text, "\n") {
		if isMarker(l) {
			return true
		}
	}
	return false
}

func isMarker(line string) bool {
	line = strings.TrimRight(line, "\r")
	for _, m := range []string{"<<<<<<<", "|||||||", ">>>>>>>"} {
		if line == m || strings.HasPrefix(line, m+" ") {
			return true
		}
	}
	return false
}

// unmergedPaths lists the worktree's paths with unmerged index entries.
func unmergedPaths(ctx context.Context, dir string) ([]string, error) {
	out, err := git(ctx, dir, "ls-files", "--unmerged", "-z")
	if err != nil {
		return nil, err
	}
	var paths []string
	seen := map[string]bool{}
	for _, rec := range strings.Split(out, "\x00") {
		if _, p, ok := strings.Cut(rec, "\t"); ok && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// isBinaryConflict reports whether a side of the conflicted path (its
// index stages 1 to 3) is binary.
func isBinaryConflict(ctx context.Context, dir, path string) bool {
	for _, stage := range []string{":1:", ":2:", ":3:"} {
		blob, err := git(ctx, dir, "cat-file", "blob", stage+path)
		if err != nil {
			continue
		}
		if bytes.IndexByte([]byte(blob[:min(len(blob), binarySniffed)]), 0) >= 0 {
			return true
		}
	}
	return false
}

// sideLog is the commits of a range, newest first, bounded: "hash subject"
// and their bodies.
func sideLog(ctx context.Context, dir, rng string) string {
	out, err := git(ctx, dir, "log", "--no-merges", fmt.Sprintf("--max-count=%d", sideCommits), "--format=%h %s%n%b", rng, "--")
	if err != nil {
		return ""
	}
	out = strings.TrimSpace(out)
	if len(out) > maxSideBytes {
		out = out[:maxSideBytes] + "\n… (more not shown)"
	}
	return out
}
