package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/worktree"
)

// gitWorkspace is a bead's git worktree as the engine uses it.
type gitWorkspace struct {
	repo *worktree.Repo
	wt   *worktree.Worktree
	// queue, when set, is the process's merge queue, which batches the
	// merges that wait together (run --ready); nil: the merge goes
	// through the repository's queue alone.
	queue *worktree.Batcher
	// retries is config.yaml's merge.gate_retries.
	retries int
	// remote, when set, is the git remote whose base the merge lands on
	// (run --ready --remote).
	remote string
}

// Remote is the remote the merge lands on ("": the local base); the
// session records it, for its resume and cancel.
func (w gitWorkspace) Remote() string { return w.remote }

func (w gitWorkspace) Dir() string    { return w.wt.Path }
func (w gitWorkspace) Branch() string { return w.wt.Branch }
func (w gitWorkspace) Base() string   { return w.wt.Base }

func (w gitWorkspace) CommitAll(ctx context.Context, message string) (bool, error) {
	return w.repo.CommitAll(ctx, w.wt, message)
}

func (w gitWorkspace) Summary(ctx context.Context) (string, string, error) {
	return w.repo.Summary(ctx, w.wt)
}

func (w gitWorkspace) Merge(ctx context.Context, req engine.MergeRequest) (engine.MergeOutcome, error) {
	opts := worktree.MergeOptions{Queued: req.Queued}
	if req.Gate != nil {
		opts.Gate = func(ctx context.Context, dir string, try worktree.GateTry) (bool, error) {
			return req.Gate(ctx, dir, engine.GateTry{Attempt: try.Attempt, Base: try.Base, Branch: try.Branch, BaseCommit: try.BaseCommit, Commit: try.Commit, Batch: try.Batch})
		}
	}
	opts.Retries = w.retries
	var res worktree.MergeResult
	var err error
	queue := w.queue
	if queue == nil && w.remote != "" {
		// A remote merge outside a --ready run (a bead session resumed on
		// its own) lands as the run's would: through a queue of its own.
		queue = w.repo.NewBatcher(1).Remote(w.remote)
		qctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			queue.Run(qctx)
		}()
		defer func() {
			queue.Close()
			<-done
			stop()
		}()
	}
	if queue != nil {
		item := worktree.MergeItem{Worktree: w.wt, Message: req.Message, Gate: opts.Gate, GateKey: req.GateKey, Retries: w.retries, Queued: req.Queued}
		if req.Batched != nil {
			item.Batched = func(n worktree.BatchNews) {
				req.Batched(engine.BatchNews{Phase: n.Phase, Branches: n.Branches, Base: n.Base, Commit: n.Commit, Green: n.Green})
			}
		}
		res, err = queue.Merge(ctx, item)
	} else {
		res, err = w.repo.MergeWith(ctx, w.wt, req.Message, opts)
	}
	if err != nil {
		return engine.MergeOutcome{}, err
	}
	out := engine.MergeOutcome{Commit: res.Commit, Refused: res.Refused, GateRed: res.GateRed, Moving: res.Moving, UpToDate: res.UpToDate, Attempts: res.Attempts, Waited: res.Waited, Batch: res.Batch}
	if res.UpToDate && out.Commit == "" {
		out.Commit = "(up to date)"
	}
	for _, c := range res.Conflicts {
		hunks := c.Hunks
		if c.Message != "" && c.Message != c.Hunks {
			hunks = strings.TrimSpace(c.Message + "\n" + hunks)
		}
		out.Conflicts = append(out.Conflicts, engine.MergeConflict{Path: c.Path, Hunks: hunks})
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
func openWorkspace(base, beadID, baseBranch string) func(session string) (engine.Workspace, error) {
	return func(session string) (engine.Workspace, error) {
		ctx := context.Background()
		repo, err := openRepo(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("a bead runs in a git worktree: %w", err)
		}
		wt, _, err := repo.Ensure(ctx, beadID, baseBranch, session)
		if err != nil {
			return nil, err
		}
		ws := gitWorkspace{repo: repo, wt: wt}
		if cfg, err := beads.LoadConfig(base); err == nil {
			ws.retries = cfg.GateRetries
		}
		return ws, nil
	}
}

// landingOn makes the workspaces open gives land on remote's base (none
// when "").
func landingOn(open func(string) (engine.Workspace, error), remote string) func(string) (engine.Workspace, error) {
	if remote == "" || open == nil {
		return open
	}
	return func(session string) (engine.Workspace, error) {
		ws, err := open(session)
		if g, ok := ws.(gitWorkspace); ok && err == nil {
			g.remote = remote
			return g, nil
		}
		return ws, err
	}
}

// throughQueue makes the workspaces open gives merge through the
// process's merge queue q (none when nil).
func throughQueue(open func(string) (engine.Workspace, error), q *worktree.Batcher) func(string) (engine.Workspace, error) {
	if q == nil || open == nil {
		return open
	}
	return func(session string) (engine.Workspace, error) {
		ws, err := open(session)
		if g, ok := ws.(gitWorkspace); ok && err == nil {
			g.queue = q
			return g, nil
		}
		return ws, err
	}
}
