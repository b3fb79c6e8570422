package report

import (
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// A bead's session read from its events: the merge queue, the gate and
// the merge cut the running stretch into bars that meet end to end, each
// from the event that began it to the one that ended it; a usage limit
// waited out inside the run is its own bar; the session's end as waiting
// goes on to the end of the report.
func TestFoldBeadSession(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	evs := []state.Event{
		{Time: at(0), Payload: events.SessionStart{}},
		{Time: at(1), Task: "ask@0", Payload: events.Limited{Waiting: true}},
		{Time: at(3), Task: "ask@0", Payload: events.LimitResume{}},
		{Time: at(4), Payload: events.MergeQueue{Address: "1"}},
		{Time: at(6), Payload: events.GateStart{Address: "1", Command: "make test"}},
		{Time: at(7), Payload: events.GateEnd{Address: "1", Green: true}},
		{Time: at(7.5), Payload: events.MergeDone{Address: "1", Commit: "abc"}},
		{Time: at(8), Payload: events.SessionEnd{Status: "completed"}},
		{Time: at(9), Payload: events.SessionResume{}},
		{Time: at(10), Payload: events.SessionEnd{Status: "waiting"}},
	}
	f := newFolder(false)
	f.fold(evs)
	f.finish(at(12))
	want := []Bar{
		{Running, at(0), at(1)}, {Limited, at(1), at(3)}, {Running, at(3), at(4)}, {Queued, at(4), at(6)},
		{Gating, at(6), at(7)}, {Running, at(7), at(7.5)}, {Merged, at(7.5), at(8)},
		{Running, at(9), at(10)}, {Waiting, at(10), at(12)},
	}
	got := f.session.bars()
	if len(got) != len(want) {
		t.Fatalf("bars %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i].State != want[i].State || !got[i].Start.Equal(want[i].Start) || !got[i].End.Equal(want[i].End) {
			t.Errorf("bar %d: %v, want %v", i, got[i], want[i])
		}
	}
	if m := f.session.marks; len(m) != 1 || m[0].Kind != Green || !m[0].Start.Equal(at(6)) || m[0].Command != "make test" {
		t.Errorf("marks %+v", m)
	}
	if f.merge != "abc" {
		t.Errorf("merge %q", f.merge)
	}
}

// The step keys: a loop's iterations share a row.
func TestStepKey(t *testing.T) {
	for addr, want := range map[string]string{"0": "0", "2.3/0": "2/0", "1.10/2.4/3": "1/2/3"} {
		if got := stepKey(addr); got != want {
			t.Errorf("stepKey(%q) = %q, want %q", addr, got, want)
		}
	}
	if a, ok := taskAddress("impl@2.1-0"); !ok || a != "2.1/0" {
		t.Errorf("taskAddress: %q %v", a, ok)
	}
	if _, ok := taskAddress("reviewer"); ok {
		t.Error("a stage task read as a step's")
	}
}
