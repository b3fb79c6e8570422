package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// recordingHost is a stepHost without an executor: it notes the changes a
// runner asks for in the workspace's log, so their order against git's is
// seen. An operation it does not define panics (the nil stepHost): a
// runner reaching for more than the test expects fails it.
type recordingHost struct {
	stepHost
	ws     *fakeWorkspace
	landed string // the merge commit the session recorded
}

func (h *recordingHost) landedMerge() string { return h.landed }

func (h *recordingHost) emit(taskID string, p events.Payload) {}
func (h *recordingHost) takeMergeDecision() (string, string)  { return "", "" }
func (h *recordingHost) merged(commit string)                 { h.ws.note("merged " + commit) }
func (h *recordingHost) setIntent(in *state.GitIntent) {
	if in == nil {
		h.ws.note("intent none")
		return
	}
	h.ws.note("intent " + in.Kind)
}

// A merge step's runner records the merge's intent before git is asked to
// merge, and closes it with the commit after, or drops it when git changed
// nothing: what a resume after a kill reconciles.
func TestMergeRunnerRecordsIntentAroundTheMerge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		outcome MergeOutcome
		landed  string
		status  flow.Status
		calls   string
	}{
		{"merged", MergeOutcome{Commit: "m1"}, "", flow.Done, "commit bd-1: Fix it,intent merge,merge,merged m1"},
		{"conflict", MergeOutcome{Conflicts: []MergeConflict{{Path: "a.go", Hunks: "<<<"}}}, "", flow.Blocked, "commit bd-1: Fix it,intent merge,merge,intent none"},
		// Nothing the base lacks, and no merge of this session landed.
		{"nothing to merge", MergeOutcome{UpToDate: true, Commit: "tip"}, "", flow.Blocked, "commit bd-1: Fix it,intent merge,merge,intent none"},
		// A kill after the merge was recorded, before the step's end was:
		// the step ends with the session's own merge, not the base's tip.
		{"landed before a kill", MergeOutcome{UpToDate: true, Commit: "tip"}, "m1", flow.Done, "commit bd-1: Fix it,intent merge,merge,merged m1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := &fakeWorkspace{dir: t.TempDir(), outcome: tc.outcome}
			g := &grimoire{
				host: &recordingHost{ws: ws, landed: tc.landed}, cfg: Options{Workspace: ws, Settings: taskrun.Settings{SessionID: "s"}},
				bead: "bd-1", title: "Fix it", def: &workflow.Definition{ID: "g"},
			}
			step := &workflow.Step{Type: workflow.StepMerge, Name: "merge", Merge: &workflow.MergeStep{}}
			res := mergeRunner{g}.Run(context.Background(), step, flow.Addr{{Index: 1}})
			if res.Status != tc.status {
				t.Errorf("status %s (%s), want %s", res.Status, res.Reason, tc.status)
			}
			if got := strings.Join(ws.calls, ","); got != tc.calls {
				t.Errorf("calls %s\nwant  %s", got, tc.calls)
			}
		})
	}
}

// A merge intent left open by a kill makes the next merge step finish that
// merge (git says whether it landed), whether the resume approved it again
// or not; a rejection is still a rejection.
func TestOpenMergeIntentIsTheMergeUnderWay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ given, want string }{
		{"", mergeUnderWay},
		{ReviewApprove, mergeUnderWay},
		{ReviewReject, ReviewReject},
	} {
		s := &sessionStore{sess: &state.Session{
			MergeDecision: tc.given,
			Intent:        &state.GitIntent{Kind: state.IntentMerge, Branch: "vibeteam/bd-1", Base: "main"},
		}}
		if got, _ := s.takeMergeDecision(); got != tc.want {
			t.Errorf("decision %q with an open merge intent = %q, want %q", tc.given, got, tc.want)
		}
	}
	s := &sessionStore{sess: &state.Session{MergeDecision: ReviewApprove}}
	if got, _ := s.takeMergeDecision(); got != ReviewApprove {
		t.Errorf("an approval without an intent = %q, want %q", got, ReviewApprove)
	}
}
