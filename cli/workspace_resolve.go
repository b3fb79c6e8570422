package cli

import (
	"context"

	"github.com/vibeteam/vibeteam/core/engine"
)

// The conflict resolution side of a bead's git worktree (see
// engine.ConflictWorkspace).

func (w gitWorkspace) MergeBase(ctx context.Context, message string) (engine.BaseMerge, error) {
	bm, err := w.repo.MergeBaseIn(ctx, w.wt, message)
	if err != nil {
		return engine.BaseMerge{}, err
	}
	out := engine.BaseMerge{Commit: bm.Commit, Binary: bm.Binary, Ours: bm.Ours, Theirs: bm.Theirs}
	for _, c := range bm.Conflicts {
		out.Conflicts = append(out.Conflicts, engine.MergeConflict{Path: c.Path, Hunks: c.Hunks})
	}
	return out, nil
}

func (w gitWorkspace) ConcludeMerge(ctx context.Context, paths []string, message string) (string, string, error) {
	return w.repo.ConcludeMerge(ctx, w.wt, paths, message)
}

func (w gitWorkspace) InMerge(ctx context.Context) (bool, error) { return w.repo.InMerge(ctx, w.wt) }

func (w gitWorkspace) AbortMerge(ctx context.Context) error { return w.repo.AbortMerge(ctx, w.wt) }

var _ engine.ConflictWorkspace = gitWorkspace{}
