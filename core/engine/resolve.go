package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// ConflictWorkspace is a Workspace whose merge conflicts can be resolved
// in its worktree: the base merged into the branch there, then committed
// once resolved.
type ConflictWorkspace interface {
	Workspace
	// MergeBase merges the base into the branch, in the worktree: a clean
	// merge is committed; a conflicting one is left in progress.
	MergeBase(ctx context.Context, message string) (BaseMerge, error)
	// ConcludeMerge commits the merge in progress once resolved; problem
	// says why it was not (a marker left, a conflicted file deleted).
	ConcludeMerge(ctx context.Context, paths []string, message string) (commit, problem string, err error)
	// InMerge reports whether the worktree is in the middle of a merge;
	// AbortMerge abandons it.
	InMerge(ctx context.Context) (bool, error)
	AbortMerge(ctx context.Context) error
}

// BaseMerge is how a merge of the base into the branch went: clean
// (Commit), or conflicting (Conflicts, Binary the binary ones among
// them). Ours and Theirs are each side's commits since they diverged.
type BaseMerge struct {
	Commit       string
	Conflicts    []MergeConflict
	Binary       []string
	Ours, Theirs string
}

// Bounds of a conflict's resolution.
const (
	// resolveAttempts is how many times an agent is given a conflict
	// before the merge blocks.
	resolveAttempts = 2
	// resolveRounds bounds the merges of the base into the branch in one
	// merge step (the base may move again while a resolution is gated).
	resolveRounds = 3
)

// resolveConflict is the merge step's answer to a merge that conflicts
// (conflicts): the base is merged into the branch in the worktree; clean,
// the merge is tried again; conflicting, an agent resolves it when the
// step says on_conflict, and the merge is tried again with the
// resolution. ok is false when the step blocks as it always did
// (merge_conflict, the worktree as it was).
func (r mergeRunner) resolveConflict(ctx context.Context, step *workflow.Step, at flow.Addr, underWay bool, round int) (flow.Result, bool) {
	g, host := r.g, r.g.host
	cw, ok := g.cfg.Workspace.(ConflictWorkspace)
	if !ok || round >= resolveRounds {
		return flow.Result{}, false
	}
	host.setIntent(&state.GitIntent{Kind: state.IntentResolve, Branch: cw.Branch(), Base: cw.Base(), Path: cw.Dir()})
	msg := fmt.Sprintf("Merge %s into %s\n\nvibeteam grimoire %s (session %s), to resolve the conflict of bead %s with %s.", cw.Base(), cw.Branch(), g.def.ID, g.cfg.SessionID, g.bead, cw.Base())
	bm, err := cw.MergeBase(ctx, msg)
	if err != nil {
		host.setIntent(nil)
		if ctx.Err() != nil {
			return stopped(ctx, flow.Result{}), true
		}
		return flow.Result{Status: flow.Failed, Reason: "merge the base into the branch: " + err.Error()}, true
	}
	news := events.MergeResolve{Step: step.Label(), Address: at.Key(), Base: cw.Base(), Branch: cw.Branch()}
	if len(bm.Conflicts) == 0 {
		host.setIntent(nil)
		news.Phase, news.Commit = events.ResolveBaseMerged, bm.Commit
		host.emit("", news)
		return r.merge(ctx, step, at, underWay, round+1), true
	}
	news.Phase, news.Files = events.ResolveConflicted, conflictFiles(bm.Conflicts)
	host.emit("", news)
	oc := step.Merge.OnConflict
	if oc == nil || !oc.Resolve {
		if res := r.abandon(ctx, cw); res.Status != "" {
			return res, true
		}
		return flow.Result{}, false
	}
	if len(bm.Binary) > 0 {
		res := r.abandon(ctx, cw)
		if res.Status != "" {
			return res, true
		}
		return flow.Result{Status: flow.Blocked, Output: conflictReport(cw, bm.Conflicts), Reason: BlockedMergeBinary.Because(fmt.Sprintf(
			"%s conflicts with %s in %s, binary: no conflict marker can show it, so no agent was asked; nothing was changed. Merge it by hand in %s (git merge %s, then commit), then: vibeteam resume %s --approve-merge",
			cw.Branch(), cw.Base(), strings.Join(bm.Binary, ", "), cw.Dir(), cw.Base(), g.cfg.SessionID))}, true
	}
	return r.resolveByAgent(ctx, step, at, underWay, round, cw, bm, msg)
}

// resolveByAgent has an agent resolve the conflicts bm left in the
// worktree, up to resolveAttempts times, then commits the resolution and
// tries the merge again. A resolution is refused when a marker is left or
// a conflicted file was deleted; the last attempt stays in the worktree.
func (r mergeRunner) resolveByAgent(ctx context.Context, step *workflow.Step, at flow.Addr, underWay bool, round int, cw ConflictWorkspace, bm BaseMerge, msg string) (flow.Result, bool) {
	host := r.g.host
	news := events.MergeResolve{Step: step.Label(), Address: at.Key(), Base: cw.Base(), Branch: cw.Branch()}
	files := conflictFiles(bm.Conflicts)
	problem := ""
	for attempt := 1; attempt <= resolveAttempts; attempt++ {
		if attempt > 1 {
			// Afresh: the next agent sees the conflict, not the last one's
			// half-resolution.
			if res := r.abandon(ctx, cw); res.Status != "" {
				return res, true
			}
			host.setIntent(&state.GitIntent{Kind: state.IntentResolve, Branch: cw.Branch(), Base: cw.Base(), Path: cw.Dir()})
			again, err := cw.MergeBase(ctx, msg)
			if err != nil || len(again.Conflicts) == 0 {
				host.setIntent(nil)
				if err != nil {
					return flow.Result{Status: flow.Failed, Reason: "merge the base into the branch: " + err.Error()}, true
				}
				return r.merge(ctx, step, at, underWay, round+1), true
			}
			bm, files = again, conflictFiles(again.Conflicts)
		}
		news.Phase, news.Attempt, news.Files = events.ResolveAgent, attempt, files
		host.emit("", news)
		res := r.runResolver(ctx, step, at, round*resolveAttempts+attempt, bm, problem)
		if res.Status == flow.Stopped || res.Status == flow.Blocked && ctx.Err() != nil || host.parked() != "" {
			return res, true
		}
		commit := ""
		if res.Status != flow.Done {
			problem = "the agent did not resolve it: " + res.Reason
		} else {
			var err error
			commit, problem, err = cw.ConcludeMerge(ctx, files, msg)
			if err != nil {
				return flow.Result{Status: flow.Failed, Reason: "commit the resolution: " + err.Error()}, true
			}
		}
		if problem == "" {
			host.setIntent(nil)
			news.Phase, news.Commit, news.Reason = events.ResolveResolved, commit, ""
			host.emit("", news)
			return r.merge(ctx, step, at, underWay, round+1), true
		}
		news.Phase, news.Reason = events.ResolveRefused, problem
		host.emit("", news)
		if strings.Contains(problem, "was deleted") {
			return r.unresolved(cw, bm, BlockedMergeDeleted, problem), true
		}
	}
	return r.unresolved(cw, bm, BlockedMergeConflict, problem), true
}

// unresolved blocks a merge whose conflict the agent did not resolve: the
// worktree keeps its last attempt, in the middle of the merge.
func (r mergeRunner) unresolved(cw ConflictWorkspace, bm BaseMerge, reason vocab.Reason, problem string) flow.Result {
	r.g.host.setIntent(nil)
	why := fmt.Sprintf("%s conflicts with %s in %s, and it was not resolved: %s. Nothing was merged; the worktree %s holds the last attempt, in the middle of the merge of %s: finish it there (no marker left, then git commit), then: vibeteam resume %s --approve-merge",
		cw.Branch(), cw.Base(), conflictPaths(bm.Conflicts), problem, cw.Dir(), cw.Base(), r.g.cfg.SessionID)
	return flow.Result{Status: flow.Blocked, Output: conflictReport(cw, bm.Conflicts), Reason: reason.Because(why)}
}

// abandon aborts the merge in progress in the worktree; a failure is the
// step's (a zero result: none).
func (r mergeRunner) abandon(ctx context.Context, cw ConflictWorkspace) flow.Result {
	err := cw.AbortMerge(context.WithoutCancel(ctx))
	r.g.host.setIntent(nil)
	if err != nil {
		return flow.Result{Status: flow.Failed, Reason: "abort the merge of the base in the worktree: " + err.Error()}
	}
	return flow.Result{}
}

// runResolver runs the resolving agent (attempt n) in the worktree, its
// spell rendered with {{.conflict}}: files, hunks, both sides' commits,
// and the problem of the attempt before.
func (r mergeRunner) runResolver(ctx context.Context, step *workflow.Step, at flow.Addr, n int, bm BaseMerge, problem string) flow.Result {
	g, host := r.g, r.g.host
	oc := step.Merge.OnConflict
	spell := oc.Spell
	if spell == "" {
		spell = workflow.ResolveSpell
	}
	adapter, mode := resolverAdapter(g.def, oc)
	var hunks strings.Builder
	for _, c := range bm.Conflicts {
		fmt.Fprintf(&hunks, "%s\n%s\n", c.Path, strings.TrimRight(c.Hunks, "\n"))
	}
	name := step.Label() + "-resolve"
	g.mu.Lock()
	g.scope.Extra = map[string]any{"conflict": map[string]any{
		"files": conflictFiles(bm.Conflicts), "hunks": strings.TrimRight(hunks.String(), "\n"),
		"ours": bm.Ours, "theirs": bm.Theirs, "base": g.cfg.Workspace.Base(), "branch": g.cfg.Workspace.Branch(),
		"problem": problem, "attempt": n,
	}}
	prompt, err := g.scope.AgentPrompt(name, g.spells, spell, nil)
	g.scope.Extra = nil
	g.mu.Unlock()
	if err != nil {
		return flow.Result{Status: flow.Failed, Reason: fmt.Sprintf("the spell %s: %v", spell, err)}
	}
	task := workflow.Task{
		ID:            state.StepTaskID(name, fmt.Sprintf("%s/%d", at.Key(), n)),
		Name:          name,
		Adapter:       adapter,
		ExecutionMode: mode,
		Prompt:        prompt,
		Cwd:           g.dir,
		Timeout:       step.Timeout,
		MCP:           host.workflowMCP(),
		Sandbox:       step.Sandbox,
	}
	host.pendTasks(true, task.ID)
	before := gitSnapshot(g.dir)
	out := &tailBuffer{limit: captureLimit}
	ok, why := runTask(ctx, host, task, prompt, func(string, string) {}, out)
	return agentRunner{g}.result(ctx, task.ID, prompt, out, before, ok, why)
}

// resolverAdapter is the adapter (and mode) of the agent that resolves a
// conflict: on_conflict's, else the grimoire's own (its first agent
// step's), else the default.
func resolverAdapter(def *workflow.Definition, oc *workflow.OnConflict) (string, string) {
	if oc.Adapter != "" {
		return oc.Adapter, workflow.DefaultAgentMode
	}
	if a := firstAgent(def.Steps); a != nil && a.Adapter != "" {
		return a.Adapter, a.ExecutionMode
	}
	return workflow.DefaultAgentAdapter, workflow.DefaultAgentMode
}

func firstAgent(steps []workflow.Step) *workflow.AgentStep {
	for i := range steps {
		if a := steps[i].Agent; a != nil {
			return a
		}
		if l := steps[i].Loop; l != nil {
			if a := firstAgent(l.Steps); a != nil {
				return a
			}
		}
	}
	return nil
}

func conflictFiles(cs []MergeConflict) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}

// conflictReport is what a blocked conflict shows: each file's hunks.
func conflictReport(ws Workspace, cs []MergeConflict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "merging %s into %s conflicts in %d file(s):\n", ws.Base(), ws.Branch(), len(cs))
	for _, c := range cs {
		fmt.Fprintf(&b, "\n%s\n%s\n", c.Path, c.Hunks)
	}
	return b.String()
}

// resumeMidMerge deals with a worktree found in the middle of a merge as
// a merge step begins: a resolution a kill interrupted (its intent still
// open) is abandoned, to be made again from the start; a merge a person
// finished by hand is committed, unless a marker is left or a conflicted
// file was deleted (then the step blocks, changing nothing).
func (r mergeRunner) resumeMidMerge(ctx context.Context, cw ConflictWorkspace) (flow.Result, bool) {
	host := r.g.host
	merging, err := cw.InMerge(ctx)
	if err != nil || !merging {
		return flow.Result{}, false
	}
	if host.openIntent() == state.IntentResolve {
		// The intent stays open: the merge it was for is still under way
		// (a person's approval of it is not asked again).
		if err := cw.AbortMerge(context.WithoutCancel(ctx)); err != nil {
			return flow.Result{Status: flow.Failed, Reason: "abort the interrupted merge of the base in the worktree: " + err.Error()}, true
		}
		host.emit("", events.Warn{Warning: fmt.Sprintf("the resolution of the conflict of %s with %s was interrupted: it is made again from the start", cw.Branch(), cw.Base())})
		return flow.Result{}, false
	}
	msg := fmt.Sprintf("Merge %s into %s\n\nResolved by hand in the worktree of bead %s (vibeteam session %s).", cw.Base(), cw.Branch(), r.g.bead, r.g.cfg.SessionID)
	_, problem, err := cw.ConcludeMerge(ctx, nil, msg)
	switch {
	case err != nil:
		return flow.Result{Status: flow.Failed, Reason: "commit the merge in progress in the worktree: " + err.Error()}, true
	case problem != "":
		return flow.Result{Status: flow.Blocked, Reason: BlockedMergeConflict.Because(fmt.Sprintf("the worktree %s is in the middle of a merge of %s, and %s; nothing was merged: finish it there, then: vibeteam resume %s --approve-merge", cw.Dir(), cw.Base(), problem, r.g.cfg.SessionID))}, true
	}
	return flow.Result{}, false
}

// openIntent is the kind of the git change under way ("": none).
func (s *sessionStore) openIntent() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess.Intent == nil {
		return ""
	}
	return s.sess.Intent.Kind
}
