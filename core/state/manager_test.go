package state

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/workflow"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func newSession(id string, status Status) *Session {
	return &Session{
		ID:         id,
		Workflow:   "wf",
		Status:     status,
		TaskStatus: map[string]TaskStatus{"a": TaskPending},
		Tasks:      map[string]*TaskRecord{"a": {Adapter: "claude", Mode: "headless"}},
		StartTime:  time.Now(),
		// A session vibeteam wrote always has its definition.
		WorkflowDefinition: &workflow.Definition{ID: "wf"},
	}
}

// putSession writes a session file with a chosen UpdatedAt, which Save would
// overwrite with the current time.
func putSession(t *testing.T, m *Manager, id string, status Status, updated time.Time) {
	t.Helper()
	s := newSession(id, status)
	s.UpdatedAt = updated
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(m.SessionPath(id), data); err != nil {
		t.Fatal(err)
	}
}

func TestPaths(t *testing.T) {
	m := NewManager("/base")
	checks := map[string]string{
		m.Root():                    "/base/.vibeteam",
		m.SessionPath("ab12"):       "/base/.vibeteam/sessions/ab12.json",
		m.LogDir("ab12"):            "/base/.vibeteam/logs/ab12",
		m.EventLogPath("ab12"):      "/base/.vibeteam/logs/ab12.jsonl",
		m.TaskLogPath("ab12", "t1"): "/base/.vibeteam/logs/ab12/t1.log",
	}
	for got, want := range checks {
		if got != filepath.FromSlash(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	for _, task := range []string{"../../etc/passwd", "..", ".", "", "a/b", "a b", ".hidden", "naïve"} {
		p := m.TaskLogPath("ab12", task)
		if filepath.Dir(p) != m.LogDir("ab12") {
			t.Errorf("task %q: log %s escapes %s", task, p, m.LogDir("ab12"))
		}
		if base := filepath.Base(p); strings.HasPrefix(base, ".") || strings.ContainsAny(base, " /\\") {
			t.Errorf("task %q: unsafe log name %q", task, base)
		}
	}
	if m.TaskLogPath("x", "a/b") == m.TaskLogPath("x", "a_b") {
		t.Error("distinct task ids share a log file")
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	m := NewManager(t.TempDir())
	s := newSession("3f2c9a1e", StatusRunning)
	s.History = []HistoryEntry{{Time: time.Now(), Kind: "prompt", TaskID: "a", Text: "do it"}}
	before := time.Now()
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	if s.UpdatedAt.Before(before) {
		t.Errorf("UpdatedAt not set: %v", s.UpdatedAt)
	}
	got, err := m.Load("3f2c9a1e")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != s.ID || got.Status != s.Status || len(got.History) != 1 || got.Tasks["a"].Adapter != "claude" {
		t.Errorf("round trip mismatch: %+v", got)
	}
	if !got.UpdatedAt.Equal(s.UpdatedAt) {
		t.Errorf("UpdatedAt %v, want %v", got.UpdatedAt, s.UpdatedAt)
	}
	checkMode(t, m.SessionPath(s.ID), 0o600)
	checkMode(t, filepath.Dir(m.SessionPath(s.ID)), 0o700)
	checkMode(t, m.Root(), 0o700)

	if err := m.Save(&Session{ID: "../evil"}); err == nil {
		t.Error("Save accepted a path-like id")
	}
	if err := m.Save(nil); err == nil {
		t.Error("Save accepted nil")
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	if runtime.GOOS == "windows" {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", path, got, want)
	}
}

func TestSaveRestrictsExistingFileMode(t *testing.T) {
	m := NewManager(t.TempDir())
	s := newSession("abcd1234", StatusRunning)
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(m.SessionPath(s.ID), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	checkMode(t, m.SessionPath(s.ID), 0o600)
}

func TestSaveConcurrent(t *testing.T) {
	m := NewManager(t.TempDir())
	shared := newSession("00aa11bb", StatusRunning)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := newSession(fmt.Sprintf("own%05d", g), StatusRunning)
			// A second Manager for the same directory must serialise too.
			mm := m
			if g%2 == 1 {
				mm = NewManager(filepath.Dir(m.Root()))
			}
			for range 12 {
				if err := mm.Save(shared); err != nil {
					errs <- err
				}
				if err := mm.Save(own); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := m.Load(shared.ID); err != nil {
		t.Fatal(err)
	}
	list, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 9 {
		t.Errorf("listed %d sessions, want 9", len(list))
	}
	entries, _ := os.ReadDir(filepath.Dir(m.SessionPath("x")))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), tempSuffix) {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

const crashChildEnv = "VIBETEAM_STATE_TEST_CRASH_DIR"

const crashHistory = 2000

// crashChild saves a large session in a tight loop until it is killed.
func crashChild(dir string) {
	m := NewManager(dir)
	s := newSession("crash001", StatusRunning)
	text := strings.Repeat("lorem ipsum dolor sit amet ", 10)
	for i := range crashHistory {
		s.History = append(s.History, HistoryEntry{Time: time.Now(), Kind: "note", Text: fmt.Sprintf("%d %s", i, text)})
	}
	for i := 0; ; i++ {
		s.Goal = "iteration " + strconv.Itoa(i)
		start := time.Now()
		if err := m.Save(s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if i == 0 {
			// The parent spreads its kills over a few save durations.
			fmt.Println("ready", time.Since(start).Nanoseconds())
		}
	}
}

// TestSaveSurvivesSIGKILL re-executes the test binary as a child that saves in
// a loop, kills it at random moments, and checks that the checkpoint on disk
// is always a complete session.
func TestSaveSurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	dir := t.TempDir()
	m := NewManager(dir)
	kills := 30
	if testing.Short() {
		kills = 5
	}
	advanced := 0
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSaveSurvivesSIGKILL$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan time.Duration, 1)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if ns, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
					n, _ := strconv.ParseInt(ns, 10, 64)
					ready <- time.Duration(n)
					return
				}
			}
			ready <- -1
		}()
		var saveTime time.Duration
		select {
		case saveTime = <-ready:
			if saveTime < 0 {
				cmd.Wait()
				t.Fatalf("child %d exited before saving", i)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child %d never became ready", i)
		}
		time.Sleep(rand.N(3*saveTime + time.Millisecond))
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		data, err := os.ReadFile(m.SessionPath("crash001"))
		if err != nil {
			t.Fatalf("after kill %d: %v", i, err)
		}
		var s Session
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("after kill %d: session file is not complete JSON (%d bytes): %v", i, len(data), err)
		}
		if s.ID != "crash001" || len(s.History) != crashHistory {
			t.Fatalf("after kill %d: incomplete session: id %q, %d history entries", i, s.ID, len(s.History))
		}
		if s.Goal != "iteration 0" {
			advanced++
		}
		checkMode(t, m.SessionPath("crash001"), 0o600)
	}
	// Leftover temporary files show kills that hit a save between creating
	// its temporary file and renaming it, the window this test is about.
	interrupted := 0
	entries, _ := os.ReadDir(filepath.Dir(m.SessionPath("x")))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), tempSuffix) {
			interrupted++
		}
	}
	t.Logf("%d kills: %d after a rewrite, %d inside a save", kills, advanced, interrupted)
}

func TestLoadNotFound(t *testing.T) {
	m := NewManager(t.TempDir())
	var nf *NotFoundError
	if _, err := m.Load("3f2c9a1e"); !errors.As(err, &nf) || len(nf.Nearest) != 0 {
		t.Fatalf("empty store: got %v", err)
	}
	for _, id := range []string{"3f2c9a1e", "3f2c0000", "3f2d9a1e", "abcdef12", "00000000", "11111111", "3f2c9a1f0"} {
		if err := m.Save(newSession(id, StatusCompleted)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.Load("3f2c9a1f")
	if !errors.As(err, &nf) {
		t.Fatalf("got %v, want NotFoundError", err)
	}
	// Shared prefix ranks first, then edit distance; at most five come back.
	want := "3f2c9a1f0,3f2c9a1e,3f2c0000,3f2d9a1e"
	if len(nf.Nearest) != 5 || strings.Join(nf.Nearest[:4], ",") != want {
		t.Errorf("nearest %v, want %s and one more", nf.Nearest, want)
	}
	if !strings.Contains(err.Error(), "3f2c9a1f") || !strings.Contains(err.Error(), "did you mean 3f2c9a1f0") {
		t.Errorf("message %q", err)
	}
	for _, bad := range []string{"../sessions/3f2c9a1e", "", ".hidden", "a/b"} {
		if _, err := m.Load(bad); !errors.As(err, &nf) {
			t.Errorf("Load(%q) = %v, want NotFoundError", bad, err)
		}
	}
}

func TestLoadCorrupt(t *testing.T) {
	m := NewManager(t.TempDir())
	if err := m.Save(newSession("good0001", StatusCompleted)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.SessionPath("bad00001"), []byte(`{"id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := m.Load("bad00001")
	var nf *NotFoundError
	if err == nil || errors.As(err, &nf) {
		t.Errorf("corrupt file: got %v, want a parse error", err)
	}
}

func TestListOrderingAndRobustness(t *testing.T) {
	m := NewManager(t.TempDir())
	if list, err := m.List(); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	base := time.Now()
	putSession(t, m, "aaaa0001", StatusCompleted, base.Add(-3*time.Hour))
	putSession(t, m, "bbbb0002", StatusFailed, base.Add(-1*time.Hour))
	putSession(t, m, "cccc0003", StatusWaiting, base.Add(-2*time.Hour))
	// Debris that must not break or pollute the listing.
	dir := filepath.Dir(m.SessionPath("x"))
	os.WriteFile(filepath.Join(dir, "corrupt1.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(dir, ".aaaa0001.json.123.tmp"), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(dir, "aaaa0001.lock"), []byte("{}"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o600)
	os.Mkdir(filepath.Join(dir, "dir.json"), 0o700)

	list, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if got := strings.Join(ids, ","); got != "bbbb0002,cccc0003,aaaa0001" {
		t.Errorf("order %s", got)
	}

	// Saving bumps a session to the front.
	s, _ := m.Load("aaaa0001")
	if err := m.Save(s); err != nil {
		t.Fatal(err)
	}
	list, _ = m.List()
	if list[0].ID != "aaaa0001" {
		t.Errorf("after save, first is %s", list[0].ID)
	}
}

func TestPrune(t *testing.T) {
	m := NewManager(t.TempDir())
	now := time.Now()
	sessions := []struct {
		id     string
		status Status
		age    time.Duration
	}{
		{"run00001", StatusRunning, 30 * time.Hour}, // oldest, but locked below
		{"wait0001", StatusWaiting, 20 * time.Hour},
		{"blck0001", StatusBlocked, 15 * time.Hour},
		{"comp0001", StatusCompleted, 10 * time.Hour},
		{"fail0001", StatusFailed, 9 * time.Hour},
		{"pmrg0001", StatusPendingMerge, 5 * time.Hour},
		{"canc0001", StatusCancelled, 1 * time.Hour},
	}
	for _, s := range sessions {
		putSession(t, m, s.id, s.status, now.Add(-s.age))
		tl, err := OpenTaskLog(m.TaskLogPath(s.id, "task"), 5)
		if err != nil {
			t.Fatal(err)
		}
		tl.Write([]byte("out\n"))
		tl.Close()
		el, err := OpenEventLog(m.EventLogPath(s.id))
		if err != nil {
			t.Fatal(err)
		}
		el.Write(Event{Session: s.id, Payload: events.Other{Name: "x"}})
		el.Close()
	}
	lock, err := m.Lock("run00001")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	// An old temporary file from a killed save is cleaned up, a fresh one is
	// not (it may be a save in progress).
	dir := filepath.Dir(m.SessionPath("x"))
	oldTmp := filepath.Join(dir, ".comp0001.json.1.tmp")
	newTmp := filepath.Join(dir, ".comp0001.json.2.tmp")
	os.WriteFile(oldTmp, []byte("{"), 0o600)
	os.WriteFile(newTmp, []byte("{"), 0o600)
	os.Chtimes(oldTmp, now.Add(-2*time.Hour), now.Add(-2*time.Hour))

	if err := m.Prune(3); err != nil {
		t.Fatal(err)
	}
	assertSessions(t, m, "blck0001,pmrg0001,run00001")
	for _, gone := range []string{"comp0001", "fail0001", "canc0001", "wait0001"} {
		for _, p := range []string{m.LogDir(gone), m.EventLogPath(gone), m.lockPath(gone)} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("%s still exists after prune", p)
			}
		}
	}
	for _, kept := range []string{"blck0001", "run00001"} {
		if _, err := os.Stat(m.TaskLogPath(kept, "task")); err != nil {
			t.Errorf("log of kept session: %v", err)
		}
	}
	if _, err := os.Stat(oldTmp); !os.IsNotExist(err) {
		t.Error("stale temp file not removed")
	}
	if _, err := os.Stat(newTmp); err != nil {
		t.Error("fresh temp file removed")
	}
	if !m.Running("run00001") {
		t.Error("prune dropped the lock of a running session")
	}

	// Even keep=0 spares the running session.
	if err := m.Prune(0); err != nil {
		t.Fatal(err)
	}
	assertSessions(t, m, "run00001")
	lock.Release()
	if err := m.Prune(0); err != nil {
		t.Fatal(err)
	}
	assertSessions(t, m, "")
	if err := m.Prune(-1); err == nil {
		t.Error("negative keep accepted")
	}
}

func TestPruneNothingToDo(t *testing.T) {
	m := NewManager(t.TempDir())
	if err := m.Prune(5); err != nil {
		t.Fatal(err)
	}
	putSession(t, m, "comp0001", StatusCompleted, time.Now())
	if err := m.Prune(1); err != nil {
		t.Fatal(err)
	}
	assertSessions(t, m, "comp0001")
}

func assertSessions(t *testing.T, m *Manager, want string) {
	t.Helper()
	ids, err := m.IDs()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids, ","); got != want {
		t.Errorf("sessions %q, want %q", got, want)
	}
}

// A session is saved as json.Marshal writes it, byte for byte, though its
// definition's part is encoded once per definition (text that looks like the
// field, in a value before it or in the definition, stays where it is).
func TestSaveWritesTheSessionAsMarshal(t *testing.T) {
	t.Parallel()
	def := &workflow.Definition{Kind: workflow.KindStages, ID: "wf", Goal: "ship \"it\"\nnow", Steps: []workflow.Step{
		{Type: workflow.StepStage, ID: "s", Tasks: []workflow.Task{{ID: "a", Adapter: "shell", Prompt: "echo ,\"workflowDefinition\":null"}}},
	}}
	m := NewManager(t.TempDir())
	s := &Session{ID: "0a1b2c3d", Workflow: "wf", Status: StatusRunning, WorkflowDefinition: def, StartTime: time.Now(),
		Vars: map[string]string{"x": ",\"workflowDefinition\":null", "y": "\n  \"workflowDefinition\": null"}, Tasks: map[string]*TaskRecord{}, TaskStatus: map[string]TaskStatus{}}
	for round := 0; round < 2; round++ { // the second from the cache
		s.Error = fmt.Sprint("round ", round)
		if err := m.Save(s); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(m.SessionPath(s.ID))
		want, _ := json.Marshal(s)
		if string(got) != string(want)+"\n" {
			t.Fatalf("round %d: saved\n%s\nwant\n%s", round, got, want)
		}
	}
	loaded, err := m.Load(s.ID)
	if err != nil || loaded.WorkflowDefinition.Steps[0].Tasks[0].Prompt != def.Steps[0].Tasks[0].Prompt {
		t.Fatalf("load: %v", err)
	}
}
