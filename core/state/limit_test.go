package state

import (
	"testing"
	"time"
)

// The scheduler of a backlog reads Session.Limit of a bead's session from
// disk while nothing compacted it: the journal must carry it.
func TestJournalCarriesTheLimit(t *testing.T) {
	t.Parallel()
	s := &Session{ID: "0123abcf", Status: StatusRunning, TaskStatus: map[string]TaskStatus{}, Tasks: map[string]*TaskRecord{}, StartTime: time.Now()}
	m, j := journaled(t, s)
	reset := time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC)
	s.Status = StatusLimited
	s.Limit = &Limit{Adapter: "claude", TaskID: "impl@0", ResetAt: &reset, Message: "You've hit your 5-hour limit · resets 5pm (UTC)"}
	s.TaskStatus["impl@0"] = TaskLimited
	if err := j.Record(s, Change{Task: "impl@0", Status: TaskLimited}, true); err != nil {
		t.Fatal(err)
	}
	got, err := m.Load(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusLimited || got.Limit == nil || got.Limit.Adapter != "claude" || got.Limit.TaskID != "impl@0" ||
		got.Limit.ResetAt == nil || !got.Limit.ResetAt.Equal(reset) || got.Limit.Message != s.Limit.Message || got.TaskStatus["impl@0"] != TaskLimited {
		t.Fatalf("after the journal: status %s, limit %+v, task %s", got.Status, got.Limit, got.TaskStatus["impl@0"])
	}
	s.Status, s.Limit = StatusRunning, nil
	if err := j.Record(s, Change{}, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Load(s.ID); got.Limit != nil {
		t.Errorf("a cleared limit came back: %+v", got.Limit)
	}
}
