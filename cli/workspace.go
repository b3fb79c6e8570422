package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/worktree"
)

// gitWorkspace is a bead's git worktree as the engine uses it.
type gitWorkspace struct {
	repo *worktree.Repo
	wt   *worktree.Worktree
}

func (w gitWorkspace) Dir() string    { return w.wt.Path }
func (w gitWorkspace) Branch() string { return w.wt.Branch }
func (w gitWorkspace) Base() string   { return w.wt.Base }

func (w gitWorkspace) CommitAll(ctx context.Context, message string) (bool, error) {
	return w.repo.CommitAll(ctx, w.wt, message)
}

func (w gitWorkspace) Summary(ctx context.Context) (string, string, error) {
	return w.repo.Summary(ctx, w.wt)
}

func (w gitWorkspace) Merge(ctx context.Context, req core.MergeRequest) (core.MergeOutcome, error) {
	opts := worktree.MergeOptions{Queued: req.Queued}
	if req.Gate != nil {
		opts.Gate = func(ctx context.Context, dir string, try worktree.GateTry) (bool, error) {
			return req.Gate(ctx, dir, core.GateTry{Attempt: try.Attempt, Base: try.Base, Branch: try.Branch, BaseCommit: try.BaseCommit, Commit: try.Commit})
		}
	}
	res, err := w.repo.MergeWith(ctx, w.wt, req.Message, opts)
	if err != nil {
		return core.MergeOutcome{}, err
	}
	out := core.MergeOutcome{Commit: res.Commit, Refused: res.Refused, GateRed: res.GateRed, Moving: res.Moving, UpToDate: res.UpToDate, Attempts: res.Attempts, Waited: res.Waited}
	if res.UpToDate && out.Commit == "" {
		out.Commit = "(up to date)"
	}
	for _, c := range res.Conflicts {
		hunks := c.Hunks
		if c.Message != "" && c.Message != c.Hunks {
			hunks = strings.TrimSpace(c.Message + "\n" + hunks)
		}
		out.Conflicts = append(out.Conflicts, core.MergeConflict{Path: c.Path, Hunks: hunks})
	}
	if !res.Merged && out.Refused == "" && len(out.Conflicts) == 0 && !out.GateRed && out.Moving == "" {
		return out, fmt.Errorf("the merge of %s into %s did not happen, for no reason git gave", w.wt.Branch, w.wt.Base)
	}
	return out, nil
}

func (w gitWorkspace) Remove(ctx context.Context) error {
	return w.repo.Remove(ctx, w.wt, false)
}

// repos are the repositories opened in this process, by directory: the
// beads of a backlog share one, and a repository's top level and git
// directory do not change while vibeteam runs.
var repos sync.Map // string → *worktree.Repo

func openRepo(ctx context.Context, dir string) (*worktree.Repo, error) {
	if r, ok := repos.Load(dir); ok {
		return r.(*worktree.Repo), nil
	}
	repo, err := worktree.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	repos.Store(dir, repo)
	return repo, nil
}

// openWorkspace returns the engine's Workspace factory for a bead: its
// worktree in the repository at base, created from baseBranch ("" is the
// current branch) for a new session, the same one again on resume.
func openWorkspace(base, beadID, baseBranch string) func(session string) (core.Workspace, error) {
	return func(session string) (core.Workspace, error) {
		ctx := context.Background()
		repo, err := openRepo(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("a bead runs in a git worktree: %w", err)
		}
		wt, _, err := repo.Ensure(ctx, beadID, baseBranch, session)
		if err != nil {
			return nil, err
		}
		return gitWorkspace{repo: repo, wt: wt}, nil
	}
}
