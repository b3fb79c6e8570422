package state

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
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

// Every field of the session's own (bead, worktree, merge facts, status,
// variables, any field added later) reaches the journal with the next
// change, without being named: a reader of the snapshot plus the journal
// sees them as they were when a kill came.
func TestJournalCarriesTheSessionHeader(t *testing.T) {
	t.Parallel()
	s := &Session{ID: "0123abce", Status: StatusRunning, TaskStatus: map[string]TaskStatus{}, Tasks: map[string]*TaskRecord{}, StartTime: time.Now()}
	m, j := journaled(t, s)
	s.Bead = map[string]any{"id": "bd-1", "title": "T"}
	s.Worktree, s.Branch, s.BaseBranch = "/r/.worktrees/bd-1", "vibeteam/bd-1", "main"
	s.Intent = &GitIntent{Kind: IntentMerge, Branch: "vibeteam/bd-1", Base: "main"}
	s.Vars = map[string]string{"k": "v"}
	run := &StepRun{Name: "work", Type: "script", Status: "done"}
	s.Runs = map[string]*StepRun{"0": run}
	if err := j.Record(s, Change{Run: run, RunKey: "0"}, true); err != nil {
		t.Fatal(err)
	}
	got, err := m.Load(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Worktree != s.Worktree || got.Branch != s.Branch || got.BaseBranch != "main" || got.Bead["id"] != "bd-1" ||
		got.Intent == nil || got.Intent.Kind != IntentMerge || got.Vars["k"] != "v" || got.Runs["0"] == nil {
		t.Fatalf("after the journal: %+v", got)
	}

	// A field cleared is cleared in the replay too; an unchanged header
	// is not written again.
	s.Intent, s.Merged = nil, "abc123"
	if err := j.Record(s, Change{}, true); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(m.journalPath(s.ID))
	if err := j.Record(s, Change{RunKey: "0", Run: run}, false); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(m.journalPath(s.ID))
	if last := after[len(before):]; strings.Contains(string(last), `"session"`) {
		t.Errorf("an unchanged header was journaled again: %s", last)
	}
	got, _ = m.Load(s.ID)
	if got.Intent != nil || got.Merged != "abc123" || got.Worktree != s.Worktree {
		t.Errorf("intent %+v merged %q worktree %q", got.Intent, got.Merged, got.Worktree)
	}
	if len(got.Damage) != 0 {
		t.Errorf("damage reported on a whole journal: %v", got.Damage)
	}

	// A torn last line is reported (once per load), and what is whole is
	// kept.
	f, _ := os.OpenFile(m.journalPath(s.ID), os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(`{"seq":99,"session":{"status":"fai`)
	f.Close()
	got, _ = m.Load(s.ID)
	if len(got.Damage) != 1 || !strings.Contains(got.Damage[0], "cut short") || got.Merged != "abc123" || got.Status != StatusRunning {
		t.Errorf("torn line: damage %v, merged %q, status %s", got.Damage, got.Merged, got.Status)
	}
}

// A write that fails half-way (a full disk) leaves no torn line for the
// next line to follow: the journal is cut back to its last whole line.
func TestJournalCutsBackAFailedWrite(t *testing.T) {
	t.Parallel()
	s := &Session{ID: "0123abcf", Status: StatusRunning, StartTime: time.Now()}
	m, j := journaled(t, s)
	if err := j.Append(Change{RunKey: "0", Run: &StepRun{Name: "a", Status: "done"}}, false); err != nil {
		t.Fatal(err)
	}
	whole, _ := os.ReadFile(m.journalPath(s.ID))
	// Half a line reaches the file, then the write fails.
	half := []byte(`{"seq":2,"runKey":"1","ru`)
	if _, err := j.f.Write(half); err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	_ = j.f.Truncate(j.good)
	j.mu.Unlock()
	if err := j.Append(Change{RunKey: "1", Run: &StepRun{Name: "b", Status: "done"}}, false); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(m.journalPath(s.ID))
	if !strings.HasPrefix(string(data), string(whole)) || strings.Contains(string(data), `"ru{`) {
		t.Errorf("journal:\n%s", data)
	}
	got, _ := m.Load(s.ID)
	if got.Runs["0"] == nil || got.Runs["1"] == nil || len(got.Damage) != 0 {
		t.Errorf("runs %v damage %v", got.Runs, got.Damage)
	}
}

// A line that carries the header is the JSON encoding of the change, byte
// for byte, though the header is put in as it is; one given through Append
// in another layout is compacted, so the line stays one line.
func TestJournalLineIsTheChangeAsJSON(t *testing.T) {
	t.Parallel()
	s := &Session{ID: "0123abcf", Status: StatusRunning, Goal: "<a & b>", StartTime: time.Now()}
	m, j := journaled(t, s)
	key := "2"
	run := &StepRun{Name: "x", Type: "script", Status: "running"}
	if err := j.Record(s, Change{Run: run, RunKey: key, Cursor: &key}, false); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Change{Task: "t", Status: TaskDone, Session: json.RawMessage("{\n  \"status\": \"failed\"\n}")}, false); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(m.journalPath(s.ID))
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), data)
	}
	var c Change
	if err := json.Unmarshal([]byte(lines[0]), &c); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(c)
	if lines[0] != string(want) {
		t.Errorf("line\n%s\nis not the change as JSON\n%s", lines[0], want)
	}
	if !strings.Contains(string(c.Session), `"goal":"\u003ca \u0026 b\u003e"`) || c.RunKey != "2" || *c.Cursor != "2" {
		t.Errorf("header %s, run key %q", c.Session, c.RunKey)
	}
	if !strings.HasSuffix(lines[1], `,"session":{"status":"failed"}}`) {
		t.Errorf("appended line: %s", lines[1])
	}
	got, err := m.Load(s.ID)
	if err != nil || got.Status != StatusFailed || got.Runs["2"] == nil || len(got.Damage) != 0 {
		t.Fatalf("load: %v, %+v", err, got)
	}
}

// journaled saves s in a new directory and opens its journal, closed at the
// end of the test.
func journaled(t *testing.T, s *Session) (*Manager, *Journal) {
	t.Helper()
	m := NewManager(t.TempDir())
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	j, err := m.OpenJournal(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return m, j
}

// TestJournalSeesEveryHeaderFieldChange changes each field of the session
// header in turn, on a session whose header the journal had just written
// (the header it can compare without encoding it): the replay has the new
// value, then the field cleared again, and an unchanged header is not
// written again. Fields are found by reflection: one added to Session is
// tried too.
func TestJournalSeesEveryHeaderFieldChange(t *testing.T) {
	t.Parallel()
	notHeader := map[string]bool{"Runs": true, "Tasks": true, "TaskStatus": true, "History": true,
		"WorkflowDefinition": true, "JournalSeq": true, "Agents": true, "Damage": true,
		"ID": true, "UpdatedAt": true} // the file's name; the time of the read
	st := reflect.TypeFor[Session]()
	for i := range st.NumField() {
		f := st.Field(i)
		if notHeader[f.Name] || f.Tag.Get("json") == "-" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			s := &Session{Version: FormatVersion, ID: "0123abcf", Status: StatusRunning, TaskStatus: map[string]TaskStatus{}, Tasks: map[string]*TaskRecord{}, StartTime: start}
			m, j := journaled(t, s)
			record := func(what string) {
				t.Helper()
				for range 2 { // the second compares with the first
					if err := j.Record(s, Change{RunKey: "0", Run: &StepRun{Name: what}}, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			check := func(what string) {
				t.Helper()
				got, err := m.Load(s.ID)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := json.Marshal(reflect.ValueOf(s).Elem().Field(i).Interface())
				have, _ := json.Marshal(reflect.ValueOf(got).Elem().Field(i).Interface())
				if string(want) != string(have) {
					t.Errorf("%s: the replay has %s, the session %s", what, have, want)
				}
			}
			record("before")
			field := reflect.ValueOf(s).Elem().Field(i)
			field.Set(sample(t, f.Type))
			record("set")
			check("set")
			field.Set(reflect.Zero(f.Type))
			record("cleared")
			check("cleared")
			before, _ := os.ReadFile(m.journalPath(s.ID))
			record("unchanged")
			after, _ := os.ReadFile(m.journalPath(s.ID))
			if strings.Contains(string(after[len(before):]), `"session"`) {
				t.Errorf("an unchanged header was written again: %s", after[len(before):])
			}
		})
	}
}

// sample is a value of type t that is not its zero value and survives
// JSON.
func sample(t *testing.T, typ reflect.Type) reflect.Value {
	t.Helper()
	if typ == reflect.TypeFor[time.Time]() {
		return reflect.ValueOf(time.Date(2027, 5, 6, 7, 8, 9, 0, time.UTC))
	}
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.String:
		v.SetString("sample-" + typ.Name())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Map:
		v.Set(reflect.MakeMap(typ))
		v.SetMapIndex(sample(t, typ.Key()), sample(t, typ.Elem()))
	case reflect.Slice:
		v.Set(reflect.Append(reflect.MakeSlice(typ, 0, 1), sample(t, typ.Elem())))
	case reflect.Pointer:
		v.Set(reflect.New(typ.Elem()))
		v.Elem().Set(sample(t, typ.Elem()))
	case reflect.Interface:
		v.Set(reflect.ValueOf("sample"))
	case reflect.Struct:
		// Its first settable field set: enough to be seen in JSON.
		for k := range typ.NumField() {
			if typ.Field(k).IsExported() && typ.Field(k).Tag.Get("json") != "-" {
				v.Field(k).Set(sample(t, typ.Field(k).Type))
				break
			}
		}
	default:
		t.Fatalf("no sample for %s", typ)
	}
	return v
}
