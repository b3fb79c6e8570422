package state

import (
	"os"
	"testing"
	"time"
)

func TestJournalReplaysOverTheSnapshot(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir())
	s := &Session{ID: "0123abcd", Status: StatusRunning, TaskStatus: map[string]TaskStatus{"a": TaskPending}, Tasks: map[string]*TaskRecord{}, StartTime: time.Now()}
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	j, err := m.OpenJournal(s)
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	code := 0
	changes := []Change{
		{Task: "a", Status: TaskRunning, Record: &TaskRecord{Adapter: "shell", Attempts: 1}},
		{History: &HistoryEntry{Kind: "input", TaskID: "a", Text: "hi"}},
		{Task: "a", Status: TaskDone, Record: &TaskRecord{Adapter: "shell", Attempts: 1, ExitCode: &code}},
		{Stage: &one},
	}
	for _, c := range changes {
		if err := j.Append(c, c.Status == TaskDone); err != nil {
			t.Fatal(err)
		}
	}
	check := func(label string) {
		t.Helper()
		got, err := m.Load(s.ID)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if got.TaskStatus["a"] != TaskDone || got.Tasks["a"].ExitCode == nil || got.CurrentStageIndex != 1 || len(got.History) != 1 {
			t.Errorf("%s: status %s, record %+v, stage %d, history %d", label, got.TaskStatus["a"], got.Tasks["a"], got.CurrentStageIndex, len(got.History))
		}
	}
	check("journal over snapshot")

	// A crash in the middle of a write leaves half a line: ignored.
	f, err := os.OpenFile(m.journalPath(s.ID), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"seq":99,"task":"a","status":"ERR`)
	f.Close()
	check("torn last line")

	// A crash after the snapshot was written but before the journal was
	// emptied: the lines it already holds are not applied twice.
	journal, _ := os.ReadFile(m.journalPath(s.ID))
	loaded, _ := m.Load(s.ID)
	loaded.JournalSeq = 4
	if err := m.Save(loaded); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.journalPath(s.ID), journal, 0o600); err != nil {
		t.Fatal(err)
	}
	check("snapshot and stale journal")

	// Compaction folds everything into the snapshot.
	if err := j.Compact(loaded); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(m.journalPath(s.ID)); st.Size() != 0 {
		t.Errorf("journal not emptied: %d bytes", st.Size())
	}
	check("compacted")
	_ = j.Close()
}
