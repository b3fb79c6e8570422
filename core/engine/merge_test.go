package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// fakeWorkspace records what the merge step did to it.
type fakeWorkspace struct {
	dir      string
	mu       sync.Mutex
	calls    []string
	outcome  MergeOutcome
	mergeErr error
}

func (w *fakeWorkspace) note(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, s)
}
func (w *fakeWorkspace) Dir() string    { return w.dir }
func (w *fakeWorkspace) Branch() string { return "vibeteam/bd-1" }
func (w *fakeWorkspace) Base() string   { return "main" }
func (w *fakeWorkspace) CommitAll(ctx context.Context, msg string) (bool, error) {
	w.note("commit " + strings.SplitN(msg, "\n", 2)[0])
	return true, nil
}
func (w *fakeWorkspace) Summary(ctx context.Context) (string, string, error) {
	w.note("summary")
	return " a.go | 2 +-", "abc123 work", nil
}
func (w *fakeWorkspace) Merge(ctx context.Context, req MergeRequest) (MergeOutcome, error) {
	w.note("merge")
	return w.outcome, w.mergeErr
}
func (w *fakeWorkspace) Remove(ctx context.Context) error {
	w.note("remove")
	return nil
}

// fakeBeads records status changes.
type fakeBeads struct {
	mu    sync.Mutex
	calls []string
	fail  bool
}

func (b *fakeBeads) SetStatus(ctx context.Context, id, status string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, id+" "+status)
	if b.fail {
		return fmt.Errorf("bd: database locked")
	}
	return nil
}
func (b *fakeBeads) Close(ctx context.Context, id, reason string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, id+" closed")
	return nil
}

func mergeGrimoire(review bool) *workflow.Definition {
	return &workflow.Definition{Kind: workflow.KindGrimoire, ID: "g", Steps: []workflow.Step{
		{Type: workflow.StepScript, Name: "work", Script: &workflow.ScriptStep{Command: "true", OnFail: workflow.OnFailBlock}},
		{Type: workflow.StepMerge, Name: "merge", Merge: &workflow.MergeStep{RequireReview: review}},
		{Type: workflow.StepScript, Name: "after", Script: &workflow.ScriptStep{Command: "true", OnFail: workflow.OnFailBlock}},
	}}
}

func runMerge(t *testing.T, def *workflow.Definition, ws *fakeWorkspace, beads *fakeBeads, review func(context.Context, ReviewRequest) (string, string), decision string) (*state.Session, Outcome, []state.Event) {
	t.Helper()
	// A session id of its own: a run stops the scripts tagged with its id
	// when it ends, and the tests run in parallel.
	id := strings.ReplaceAll(t.Name(), "/", "-")
	sess := &state.Session{ID: id, Workflow: "g", WorkflowDefinition: def, BaseDir: t.TempDir(),
		Bead: map[string]any{"id": "bd-1", "title": "Fix it"}, MergeDecision: decision}
	ws.dir = sess.BaseDir
	var (
		mu     sync.Mutex
		events []state.Event
	)
	x := New(sess, Options{Workspace: ws, Beads: beads, Review: review, Emit: func(e state.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	out, err := x.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sess, out, events
}

func TestMergeWithoutReviewMergesAndCleansUp(t *testing.T) {
	t.Parallel()
	ws := &fakeWorkspace{outcome: MergeOutcome{Commit: "m1"}}
	beads := &fakeBeads{}
	sess, out, _ := runMerge(t, mergeGrimoire(false), ws, beads, nil, "")
	if out.Status != state.StatusCompleted || sess.Merged != "m1" || sess.Runs["2"].Status != "done" {
		t.Fatalf("status %s merged %q runs %v", out.Status, sess.Merged, sess.Runs["2"])
	}
	if got := strings.Join(ws.calls, ","); got != "commit bd-1: Fix it,merge,remove" {
		t.Errorf("workspace calls %s", got)
	}
	if got := strings.Join(beads.calls, ","); got != "bd-1 in_progress,bd-1 closed" {
		t.Errorf("bead calls %s", got)
	}
}

func TestMergeWithoutTerminalWaitsThenApprove(t *testing.T) {
	t.Parallel()
	ws := &fakeWorkspace{outcome: MergeOutcome{Commit: "m1"}}
	beads := &fakeBeads{}
	sess, out, events := runMerge(t, mergeGrimoire(true), ws, beads, nil, "")
	if out.Status != state.StatusPendingMerge || sess.Runs["2"] != nil {
		t.Fatalf("status %s, the step after the merge: %v", out.Status, sess.Runs["2"])
	}
	if strings.Contains(strings.Join(ws.calls, ","), "merge") {
		t.Errorf("merged without a review: %v", ws.calls)
	}
	if got := strings.Join(beads.calls, ","); got != "bd-1 in_progress,bd-1 blocked" {
		t.Errorf("bead calls %s", got)
	}
	found := false
	for _, e := range events {
		if e.Kind() == "workflow.merge_pending" && e.Fields()["stat"] == " a.go | 2 +-" {
			found = true
		}
	}
	if !found {
		t.Error("no workflow.merge_pending event with the summary")
	}

	// resume --approve-merge: the same session, the decision given.
	sess.MergeDecision = ReviewApprove
	sess.Status = state.StatusPendingMerge
	ws.calls = nil
	x := New(sess, Options{Workspace: ws, Beads: beads})
	out2, err := x.Run(context.Background())
	if err != nil || out2.Status != state.StatusCompleted || sess.Runs["2"].Status != "done" || sess.Runs["0"].Attempts != 1 {
		t.Fatalf("after approve: %s, %v, %+v", out2.Status, err, sess.Runs)
	}
	if got := strings.Join(ws.calls, ","); got != "commit bd-1: Fix it,merge,remove" {
		t.Errorf("workspace calls after approve %s", got)
	}
}

func TestMergeReviewedAtTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision, reason string
		status           state.Status
		blocked          vocab.Reason
	}{
		{ReviewApprove, "", state.StatusCompleted, ""},
		{ReviewReject, "not what was asked", state.StatusBlocked, BlockedMergeRejected},
		{ReviewLater, "", state.StatusPendingMerge, ""},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			ws := &fakeWorkspace{outcome: MergeOutcome{Commit: "m1"}}
			var asked ReviewRequest
			review := func(ctx context.Context, r ReviewRequest) (string, string) {
				asked = r
				return tc.decision, tc.reason
			}
			sess, out, _ := runMerge(t, mergeGrimoire(true), ws, &fakeBeads{}, review, "")
			if out.Status != tc.status || sess.BlockedReason != tc.blocked {
				t.Fatalf("status %s blocked %q", out.Status, sess.BlockedReason)
			}
			if asked.Bead != "bd-1" || asked.Title != "Fix it" || asked.Stat == "" || asked.Commits == "" || asked.Base != "main" {
				t.Errorf("review request %+v", asked)
			}
			if tc.reason != "" && !strings.Contains(sess.Error, tc.reason) {
				t.Errorf("error %q lacks the reason", sess.Error)
			}
		})
	}
}

func TestMergeConflictAndRefusalBlock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		outcome MergeOutcome
		reason  vocab.Reason
		context string
	}{
		{MergeOutcome{Conflicts: []MergeConflict{{Path: "a.go", Hunks: "<<<<<<< main\nx\n=======\ny\n>>>>>>> vibeteam/bd-1"}}}, BlockedMergeConflict, "<<<<<<< main"},
		{MergeOutcome{Refused: "error: Your local changes to the following files would be overwritten by merge:\n\ta.go"}, BlockedMergeRefused, "would be overwritten"},
	} {
		t.Run(string(tc.reason), func(t *testing.T) {
			t.Parallel()
			ws := &fakeWorkspace{outcome: tc.outcome}
			beads := &fakeBeads{fail: true} // a bd failure is a warning, never the outcome
			sess, out, events := runMerge(t, mergeGrimoire(false), ws, beads, nil, "")
			if out.Status != state.StatusBlocked || sess.BlockedReason != tc.reason || !strings.Contains(sess.BlockedContext, tc.context) {
				t.Fatalf("status %s reason %q context %q", out.Status, sess.BlockedReason, sess.BlockedContext)
			}
			if strings.Contains(strings.Join(ws.calls, ","), "remove") {
				t.Error("the worktree was removed after a failed merge")
			}
			warned := false
			for _, e := range events {
				if e.Kind() == "warning" && strings.Contains(fmt.Sprint(e.Fields()["warning"]), "database locked") {
					warned = true
				}
			}
			if !warned {
				t.Error("a failed bead update was not a warning")
			}
		})
	}
}
