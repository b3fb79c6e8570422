package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// BeadTracker updates the bead a grimoire works on (bd). A failed update is
// a warning: the run's own outcome is what counts.
type BeadTracker interface {
	SetStatus(ctx context.Context, id, status string) error
	Close(ctx context.Context, id, reason string) error
}

// Workspace is the bead's git worktree, where a grimoire's steps run and
// whose branch its merge step brings back to the base branch.
type Workspace interface {
	Dir() string
	Branch() string
	Base() string
	// CommitAll commits what the steps left uncommitted.
	CommitAll(ctx context.Context, message string) (bool, error)
	// Summary is what a person reviews: the diff stat against the base
	// and the commits.
	Summary(ctx context.Context) (stat, commits string, err error)
	// Merge brings the branch into the base through the repository's
	// merge queue, with the request's gate (see MergeRequest).
	Merge(ctx context.Context, req MergeRequest) (MergeOutcome, error)
	// Remove deletes the worktree and its (merged) branch.
	Remove(ctx context.Context) error
}

// MergeOutcome is how a merge went: merged (Commit), conflicting (nothing
// was touched), refused by git (the base checkout has local changes the
// merge would overwrite; nothing was touched), red at its gate (GateRed;
// nothing was touched), or given up because the base kept moving while it
// was checked (Moving says so; nothing was touched). Attempts is how many
// times it was computed.
type MergeOutcome struct {
	Commit    string
	Conflicts []MergeConflict
	Refused   string
	GateRed   bool
	Moving    string
	// UpToDate: the base had all of the branch already; nothing moved.
	UpToDate bool
	Attempts int
	// Waited is how long the merge waited for the merge queue.
	Waited time.Duration
	// Batch, for a merge landed with others or found red among them, is
	// the batch's branches, oldest first.
	Batch []string
}

// MergeConflict is one conflicting file and its hunks.
type MergeConflict struct {
	Path  string
	Hunks string
}

// ReviewRequest is what a person sees before a merge.
type ReviewRequest struct {
	Step, Bead, Title, Branch, Base, Stat, Commits, Dir string
}

// Review decisions.
const (
	ReviewApprove = "approve"
	ReviewReject  = "reject"
	ReviewLater   = "later" // park: the session is pending_merge
	// mergeUnderWay is the approval an open merge intent gives: a merge
	// begun when vibeteam was killed, which git may have landed already.
	mergeUnderWay = "under_way"
)

// Bead statuses vibeteam sets.
const (
	beadInProgress = "in_progress"
	beadBlocked    = "blocked"
	beadOpen       = "open"
)

// beadStatus updates the bead's status, if it is tracked; a failure is a
// warning.
func (x *Executor) beadStatus(status string) {
	id := beadID(x.sess.Bead)
	if x.opts.Beads == nil || id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := x.opts.Beads.SetStatus(ctx, id, status); err != nil {
		x.emit("", events.Warn{Warning: fmt.Sprintf("bead %s: could not set status %s: %v", id, status, err)})
	}
}

// beadClose closes the bead when the grimoire has completed.
func (x *Executor) beadClose(reason string) {
	id := beadID(x.sess.Bead)
	if x.opts.Beads == nil || id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := x.opts.Beads.Close(ctx, id, reason); err != nil {
		x.emit("", events.Warn{Warning: fmt.Sprintf("bead %s: could not close it: %v", id, err)})
	}
}

// mergeRunner runs a merge step: the worktree's changes committed, a
// person's review (unless require_review: false), then the merge into the
// base branch, which touches nothing when it cannot be done.
type mergeRunner struct{ g *grimoire }

func (r mergeRunner) Run(ctx context.Context, step *workflow.Step, at flow.Addr) flow.Result {
	g, host := r.g, r.g.host
	ws := g.cfg.Workspace
	g.stepStarted(step, at, nil)
	if ws == nil {
		return flow.Result{Status: flow.Blocked, Reason: "a merge step needs the bead's worktree: run the grimoire with --bead ID"}
	}
	if cw, ok := ws.(ConflictWorkspace); ok {
		if res, stop := (mergeRunner{g}).resumeMidMerge(ctx, cw); stop {
			return res
		}
	}
	title, id := g.title, g.bead
	msg := fmt.Sprintf("%s: %s\n\nWork of vibeteam grimoire %s (session %s) on bead %s.", id, title, g.def.ID, g.cfg.SessionID, id)
	if _, err := ws.CommitAll(ctx, msg); err != nil {
		return flow.Result{Status: flow.Failed, Reason: "commit the worktree: " + err.Error()}
	}

	decision, reason := host.takeMergeDecision()
	underWay := decision == mergeUnderWay
	if step.Merge.RequireReview && decision == "" {
		stat, commits, err := ws.Summary(ctx)
		if err != nil {
			return flow.Result{Status: flow.Failed, Reason: "summarize the work for review: " + err.Error()}
		}
		if commits == "" {
			// Nothing to review: no person is asked about an empty merge.
			return nothingToMerge(step, ws, g.cfg.SessionID)
		}
		req := ReviewRequest{Step: step.Label(), Bead: id, Title: title, Branch: ws.Branch(), Base: ws.Base(), Stat: stat, Commits: commits, Dir: ws.Dir()}
		decision = ReviewLater
		if g.cfg.Review != nil {
			decision, reason = g.cfg.Review(ctx, req)
		}
		if decision == ReviewLater {
			host.awaitReview()
			host.emit("", events.MergeWait{
				Step: step.Label(), Address: at.Key(), Bead: id, Branch: ws.Branch(), Base: ws.Base(), Stat: stat, Commits: commits,
			})
			return flow.Result{Status: flow.Waiting, Reason: fmt.Sprintf("the merge of %s into %s waits for a review", ws.Branch(), ws.Base())}
		}
	}
	if ctx.Err() != nil {
		return stopped(ctx, flow.Result{})
	}
	if decision == ReviewReject {
		why := "the merge was rejected"
		if reason != "" {
			why += ": " + reason
		}
		return flow.Result{Status: flow.Blocked, Reason: BlockedMergeRejected.Because(why + " (nothing was discarded: the worktree " + ws.Dir() + " and branch " + ws.Branch() + " are kept)")}
	}
	if step.Merge.GateDefault && step.Merge.Gate == "" {
		// gate: true, and the project's default could not be read when the
		// grimoire was loaded.
		return flow.Result{Status: flow.Blocked, Reason: BlockedGateRed.Because("gate: true runs the project's default gate, and none was found (.vibeteam/config.yaml merge.gate); nothing was merged")}
	}
	return r.merge(ctx, step, at, underWay, 0)
}

// merge brings the worktree's branch into the base through the
// Workspace's merge queue, its merge intent journaled first: a kill while
// it runs leaves the intent open, which resume takes for a merge under way.
// round counts the merges of the base into the branch made to resolve a
// conflict (see resolveConflict).
func (r mergeRunner) merge(ctx context.Context, step *workflow.Step, at flow.Addr, underWay bool, round int) flow.Result {
	g, host := r.g, r.g.host
	ws := g.cfg.Workspace
	title, id := g.title, g.bead
	host.setIntent(&state.GitIntent{Kind: state.IntentMerge, Branch: ws.Branch(), Base: ws.Base(), Path: ws.Dir()})
	req := MergeRequest{
		Message: fmt.Sprintf("Merge %s: %s\n\nBead %s, vibeteam grimoire %s (session %s).", ws.Branch(), title, id, g.def.ID, g.cfg.SessionID),
		Queued: func() {
			host.emit("", events.MergeQueue{Step: step.Label(), Address: at.Key(), Base: ws.Base()})
		},
		Batched: func(n BatchNews) {
			host.emit("", events.MergeBatch{Step: step.Label(), Address: at.Key(), Phase: n.Phase, Base: n.Base, Branches: n.Branches, Commit: n.Commit, Green: n.Green})
		},
	}
	var gate *gateRunner
	if step.Merge.Gate != "" {
		gate = &gateRunner{g: g, step: step, at: at}
		req.Gate = gate.run
		req.GateKey = gateKey(step)
	}
	out, err := ws.Merge(ctx, req)
	if err != nil || len(out.Conflicts) > 0 || out.Refused != "" || out.GateRed || out.Moving != "" {
		// Nothing changed (git said so): no intent is left open.
		host.setIntent(nil)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return stopped(ctx, flow.Result{})
	case err != nil:
		return flow.Result{Status: flow.Failed, Reason: "merge: " + err.Error()}
	case len(out.Conflicts) > 0:
		if res, ok := r.resolveConflict(ctx, step, at, underWay, round); ok {
			return res
		}
		var b strings.Builder
		fmt.Fprintf(&b, "merging %s into %s conflicts in %d file(s); nothing was changed:\n", ws.Branch(), ws.Base(), len(out.Conflicts))
		for _, c := range out.Conflicts {
			fmt.Fprintf(&b, "\n%s\n%s\n", c.Path, c.Hunks)
		}
		fmt.Fprintf(&b, "\nResolve it in the worktree %s (git rebase %s, or git merge %s, then commit), then: vibeteam resume %s --approve-merge", ws.Dir(), ws.Base(), ws.Base(), g.cfg.SessionID)
		return flow.Result{Status: flow.Blocked, Output: b.String(), Reason: BlockedMergeConflict.Because(fmt.Sprintf("%s conflicts with %s in %s", ws.Branch(), ws.Base(), conflictPaths(out.Conflicts)))}
	case out.Refused != "":
		return flow.Result{Status: flow.Blocked, Output: out.Refused, Reason: BlockedMergeRefused.Because("git refused to update " + ws.Base() + " in your checkout (nothing was changed): " + excerpt.FirstLine(out.Refused))}
	case out.GateRed:
		return gateRed(step, ws, gate.lastRun(), out.Batch, g.cfg.SessionID)
	case out.Moving != "":
		return flow.Result{Status: flow.Blocked, Output: out.Moving, Reason: BlockedMergeMoving.Because(out.Moving)}
	case out.UpToDate && !underWay && host.landedMerge() == "":
		// The base had the branch already, and no merge of this session
		// was under way or landed to have put it there: there was nothing
		// to bring.
		host.setIntent(nil)
		return nothingToMerge(step, ws, g.cfg.SessionID)
	}
	commit := out.Commit
	if landed := host.landedMerge(); out.UpToDate && landed != "" {
		// This session's merge landed and was recorded, and vibeteam was
		// killed before the step's end was: the same merge, with its own
		// commit (the base's tip may be a later bead's by now).
		commit = landed
	}
	host.merged(commit)
	host.emit("", events.MergeDone{Step: step.Label(), Address: at.Key(), Commit: commit, Branch: ws.Branch(), Base: ws.Base(), QueuedMS: out.Waited.Milliseconds()})
	summary := fmt.Sprintf("merged %s into %s", ws.Branch(), ws.Base())
	if last := gate.lastRun(); last != nil {
		summary += fmt.Sprintf(", its gate green in %s", last.Duration.Round(time.Millisecond))
		if out.Attempts > 1 {
			summary += fmt.Sprintf(" (run %d times: %s moved meanwhile)", out.Attempts, ws.Base())
		}
	}
	return flow.Result{Status: flow.Done, Output: commit, Summary: summary}
}

// gateRed is the result of a merge whose gate was red: blocked, with
// the last run's output, and the batch it was found red in.
func gateRed(step *workflow.Step, ws Workspace, last *GateResult, batch []string, session string) flow.Result {
	res := flow.Result{Status: flow.Blocked, ExitCode: -1}
	why := "it did not run"
	if last != nil {
		res.Output, res.ExitCode, res.LogPath = last.Output, last.ExitCode, last.LogPath
		why = fmt.Sprintf("exit %d", last.ExitCode)
		if last.Reason != "" {
			why = last.Reason
		}
		why += " after " + last.Duration.Round(time.Millisecond).String()
	}
	if len(batch) > 1 {
		why += fmt.Sprintf("; found red in the batch %s, gated on its own", strings.Join(batch, ", "))
	}
	res.Reason = fmt.Sprintf("%s: the gate (%s) failed on the merge of %s into %s (%s); %s did not move: fix the work in %s, then vibeteam resume %s --approve-merge",
		BlockedGateRed, excerpt.FirstLine(step.Merge.Gate), ws.Branch(), ws.Base(), why, ws.Base(), ws.Dir(), session)
	if last != nil && last.Refused != "" {
		// Red because its sandbox refused a write: that is the cause.
		res.Reason = fmt.Sprintf("%s: %s; the merge step's sandbox: block is the gate's (%s)", sandbox.RefusedReason, last.Refused, res.Reason)
	}
	return res
}

// gateKey names a merge step's gate: its command, timeout and sandbox.
func gateKey(step *workflow.Step) string {
	box, _ := json.Marshal(step.Sandbox)
	return fmt.Sprintf("%s\x00%s\x00%s", step.Merge.Gate, time.Duration(step.Merge.GateTimeout), box)
}

// nothingToMerge ends a merge step whose branch has no commit its base
// lacks: done with allow_empty, blocked otherwise, and in neither case
// merged (the bead is closed only for work that landed).
func nothingToMerge(step *workflow.Step, ws Workspace, session string) flow.Result {
	what := fmt.Sprintf("nothing to merge: %s has no commit that %s lacks", ws.Branch(), ws.Base())
	if step.Merge.AllowEmpty {
		return flow.Result{Status: flow.Done, Summary: what + " (allow_empty)"}
	}
	return flow.Result{Status: flow.Blocked, Output: what, Reason: BlockedNothingToMerge.Because(what) +
		"; the steps before it committed no work. Commit the work in " + ws.Dir() + " and vibeteam resume " + session +
		", or write allow_empty: true on the merge step when an empty merge is a success"}
}

func conflictPaths(cs []MergeConflict) string {
	paths := make([]string, len(cs))
	for i, c := range cs {
		paths[i] = c.Path
	}
	return strings.Join(paths, ", ")
}

// cleanupAfterMerge removes the worktree and branch of a completed
// grimoire whose work was merged; a failure is a warning.
func (x *Executor) cleanupAfterMerge() {
	if x.opts.Workspace == nil || x.sess.Merged == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := x.opts.Workspace
	x.setIntent(&state.GitIntent{Kind: state.IntentRemove, Branch: ws.Branch(), Base: ws.Base(), Path: ws.Dir()})
	if err := ws.Remove(ctx); err != nil {
		x.emit("", events.Warn{Warning: "remove the worktree after the merge: " + err.Error()})
		return // the intent stays open: a resume removes what is left
	}
	x.setIntent(nil)
}
