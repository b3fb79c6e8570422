package beads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBD is testdata/fakebd, built once for the package's tests.
var fakeBD string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vibeteam-beads-test")
	if err != nil {
		panic(err)
	}
	fakeBD = filepath.Join(dir, "bd")
	cmd := exec.Command("go", "build", "-o", fakeBD, "../../testdata/fakebd")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		panic(fmt.Sprintf("build testdata/fakebd: %v", err))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fake is a Client of the fake bd, with its database and call log.
type fake struct {
	*Client
	t       *testing.T
	db, log string
}

// newFake writes issues to a fresh database; env is added to bd's
// environment (FAKEBD_FORMAT=object, FAKEBD_FAIL=update).
func newFake(t *testing.T, issues []Bead, env ...string) *fake {
	t.Helper()
	dir := t.TempDir()
	f := &fake{t: t, db: filepath.Join(dir, "beads.json"), log: filepath.Join(dir, "bd.log")}
	db := map[string]Bead{}
	for _, is := range issues {
		db[is.ID()] = is
	}
	data, err := json.Marshal(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.db, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f.Client = &Client{Bin: fakeBD, Dir: dir, Env: append(os.Environ(), append([]string{"FAKEBD_DB=" + f.db, "FAKEBD_LOG=" + f.log}, env...)...)}
	return f
}

// calls are the fake bd's calls so far, one argument list each.
func (f *fake) calls() [][]string {
	f.t.Helper()
	data, err := os.ReadFile(f.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c struct{ Args []string }
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			f.t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, c.Args)
	}
	return out
}

// stored is issue id as the fake bd's database holds it.
func (f *fake) stored(id string) Bead {
	f.t.Helper()
	data, err := os.ReadFile(f.db)
	if err != nil {
		f.t.Fatal(err)
	}
	var db map[string]Bead
	if err := json.Unmarshal(data, &db); err != nil {
		f.t.Fatal(err)
	}
	return db[id]
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// fullBead has every field the issue names, as JSON decodes them.
func fullBead(id string, extra map[string]any) Bead {
	b := Bead{
		"id": id, "title": "Add a greeting", "description": "Say hello.", "design": "One function.",
		"acceptance_criteria": "It greets.", "notes": "See bd-0.", "status": "open", "priority": float64(1),
		"issue_type": "feature", "labels": []any{"area:cli", "grimoire:fix-bug"}, "assignee": "ann",
		"dependencies": []any{}, "created_at": "2025-01-02T03:04:05Z", "external_ref": "gh-9",
	}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestShowArrayAndObject(t *testing.T) {
	t.Parallel()
	stored := fullBead("bd-12", nil)
	// bd omits the empty dependencies, and gives counts.
	want := fullBead("bd-12", map[string]any{"dependency_count": float64(0), "dependent_count": float64(0), "comment_count": float64(0)})
	delete(want, "dependencies")
	for _, format := range []string{"array", "object"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, []Bead{stored, fullBead("bd-2", nil)}, "FAKEBD_FORMAT="+format)
			b, err := f.Show(ctx(t), "bd-12")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(b, want) {
				t.Errorf("show:\n got %v\nwant %v", b, want)
			}
			if b.ID() != "bd-12" || b.Title() != "Add a greeting" || b.Type() != "feature" || b.Status() != "open" {
				t.Errorf("accessors: %q %q %q %q", b.ID(), b.Title(), b.Type(), b.Status())
			}
			if got := b.Labels(); !slices.Equal(got, []string{"area:cli", "grimoire:fix-bug"}) {
				t.Errorf("labels %v", got)
			}
			if got := f.calls(); !reflect.DeepEqual(got, [][]string{{"show", "bd-12", "--json"}}) {
				t.Errorf("calls %q", got)
			}
		})
	}
}

// The status changes of a run, in bd's words, and what bd keeps of them.
func TestStatusAndCloseCalls(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{fullBead("bd-1", nil)})
	c := ctx(t)
	for _, s := range []string{StatusInProgress, StatusBlocked, StatusOpen, StatusInProgress} {
		if err := f.SetStatus(c, "bd-1", s); err != nil {
			t.Fatal(err)
		}
		if got := f.stored("bd-1").Status(); got != s {
			t.Errorf("status %q after setting %q", got, s)
		}
	}
	reason := `Done: "hello" added; it's tested`
	if err := f.Close(c, "bd-1", reason); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"update", "bd-1", "--status", "in_progress"},
		{"update", "bd-1", "--status", "blocked"},
		{"update", "bd-1", "--status", "open"},
		{"update", "bd-1", "--status", "in_progress"},
		{"close", "bd-1", "--reason", reason},
	}
	if got := f.calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
	if b := f.stored("bd-1"); b.Status() != StatusClosed || b["close_reason"] != reason || b["title"] != "Add a greeting" {
		t.Errorf("closed bead: %v", b)
	}
}

// bd's own message reaches the user, with the command; a failed update is
// a *BDError the caller can turn into a warning.
func TestBDFailureMessage(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{fullBead("bd-1", nil)}, "FAKEBD_FAIL=update")
	c := ctx(t)
	_, err := f.Show(c, "bd-9")
	var be *BDError
	if !errors.As(err, &be) || be.ExitCode != 1 || !slices.Equal(be.Args, []string{"show", "bd-9", "--json"}) {
		t.Fatalf("show of an unknown bead: %#v", err)
	}
	if got := err.Error(); !strings.HasPrefix(got, `bd show bd-9 --json: Error fetching bd-9: no issue found matching "bd-9"`) || strings.HasSuffix(got, "\n") {
		t.Errorf("message %q", got)
	}
	err = f.SetStatus(c, "bd-1", StatusInProgress)
	if !errors.As(err, &be) || be.ExitCode != 1 || !strings.Contains(be.Stderr, "database is locked") {
		t.Fatalf("failed update: %#v", err)
	}
	if got := err.Error(); got != "bd update bd-1 --status in_progress: Error: update failed: database is locked (FAKEBD_FAIL)" {
		t.Errorf("message %q", got)
	}
	if got := f.stored("bd-1").Status(); got != StatusOpen {
		t.Errorf("a failed update changed the status to %q", got)
	}
	// Only update fails; the reason of a close is quoted as a shell would.
	if err := f.Close(c, "bd-1", "all done"); err != nil {
		t.Fatal(err)
	}
	err = f.Close(c, "bd-7", "it's done")
	if err == nil || !strings.HasPrefix(err.Error(), `bd close bd-7 --reason 'it'\''s done': Error: issue bd-7 not found`) {
		t.Errorf("close of an unknown bead: %v", err)
	}
}

func TestNoBD(t *testing.T) {
	// t.Setenv: not parallel.
	t.Setenv("PATH", t.TempDir())
	_, err := NewClient(".")
	if !errors.Is(err, ErrNoBD) {
		t.Fatalf("NewClient without bd: %v", err)
	}
	for _, want := range []string{"beads CLI", "npm install -g @beads/bd", "CGO_ENABLED=1 go install -tags gms_pure_go github.com/steveyegge/beads/cmd/bd@latest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	t.Setenv("PATH", filepath.Dir(fakeBD))
	c, err := NewClient("/some/project")
	if err != nil || c.Bin != fakeBD || c.Dir != "/some/project" {
		t.Errorf("NewClient with bd on PATH: %+v, %v", c, err)
	}
}

// A bd that cannot run, or runs out of time, is a *BDError that says so.
func TestBDDoesNotRun(t *testing.T) {
	t.Parallel()
	c := &Client{Bin: filepath.Join(t.TempDir(), "no-bd")}
	err := c.SetStatus(ctx(t), "bd-1", StatusOpen)
	var be *BDError
	if !errors.As(err, &be) || be.ExitCode != -1 || be.Err == nil || !strings.HasPrefix(err.Error(), "bd update bd-1 --status open: ") {
		t.Errorf("missing program: %v", err)
	}
	f := newFake(t, []Bead{fullBead("bd-1", nil)})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.Show(cancelled, "bd-1")
	if !errors.As(err, &be) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// An id bd would take for a flag, or none, is refused before bd runs.
func TestBadIDsAreNotPassed(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	c := ctx(t)
	if _, err := f.Show(c, "--all"); err == nil {
		t.Error("show --all")
	}
	if err := f.SetStatus(c, "", StatusOpen); err == nil {
		t.Error("update of no id")
	}
	if err := f.SetStatus(c, "bd-1", ""); err == nil {
		t.Error("update to no status")
	}
	if err := f.Close(c, "-x", "r"); err == nil {
		t.Error("close -x")
	}
	if calls := f.calls(); len(calls) != 0 {
		t.Errorf("bd ran: %q", calls)
	}
}

func dep(id, status, typ string) map[string]any {
	return map[string]any{"id": id, "title": "t " + id, "status": status, "dependency_type": typ}
}

func ids(list []Bead) []string {
	var out []string
	for _, b := range list {
		out = append(out, b.ID())
	}
	return out
}

func TestReady(t *testing.T) {
	t.Parallel()
	st := func(id, status string, deps ...any) Bead {
		return fullBead(id, map[string]any{"status": status, "dependencies": append([]any{}, deps...)})
	}
	f := newFake(t, []Bead{
		st("bd-1", "open"),
		st("bd-2", "in_progress"),
		st("bd-3", "closed"),
		st("bd-4", "open", dep("bd-1", "open", "blocks")),
		st("bd-5", "open", dep("bd-3", "closed", "blocks")),
		st("bd-6", "open", dep("bd-1", "open", "related"), dep("bd-1", "open", "parent-child")),
		st("bd-10", "open", map[string]any{"issue_id": "bd-10", "depends_on_id": "bd-2", "type": "blocks"}),
	})
	list, err := f.Ready(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); !slices.Equal(got, []string{"bd-1", "bd-5", "bd-6"}) {
		t.Errorf("ready %v", got)
	}
	if list[0].Title() != "Add a greeting" || list[0]["priority"] != float64(1) {
		t.Errorf("a ready bead lost its fields: %v", list[0])
	}
	if got := f.calls(); !reflect.DeepEqual(got, [][]string{{"ready", "--json", "--limit", "0"}}) {
		t.Errorf("calls %q", got)
	}
	empty := newFake(t, nil)
	if list, err := empty.Ready(ctx(t)); err != nil || list == nil || len(list) != 0 {
		t.Errorf("nothing ready: %v, %v", list, err)
	}
}

// Blockers through bd: created, linked with dep add, then closed.
func TestBlockersThroughBD(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil, "FAKEBD_LIVE_DEPS=1")
	c := ctx(t)
	create := func(title string) string {
		out, err := f.run(c, "create", "--title", title, "--type", "feature", "--json")
		if err != nil {
			t.Fatal(err)
		}
		b, err := parseBead(out)
		if err != nil {
			t.Fatal(err)
		}
		return b.ID()
	}
	a, b1, b2 := create("Work"), create("First"), create("Second")
	if a != "bd-1" || b1 != "bd-2" || b2 != "bd-3" {
		t.Fatalf("ids %s %s %s", a, b1, b2)
	}
	for _, args := range [][]string{{"dep", "add", a, b1}, {"dep", "add", a, b2}, {"dep", "add", b2, b1, "--type", "related"}} {
		if _, err := f.run(c, args...); err != nil {
			t.Fatal(err)
		}
	}
	show := func() Bead {
		b, err := f.Show(c, a)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if got := show().OpenBlockers(); !slices.Equal(got, []string{"bd-2 (open)", "bd-3 (open)"}) {
		t.Errorf("blockers %v", got)
	}
	if err := f.SetStatus(c, b1, StatusInProgress); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(c, b2, "done"); err != nil {
		t.Fatal(err)
	}
	if got := show().OpenBlockers(); !slices.Equal(got, []string{"bd-2 (in_progress)"}) {
		t.Errorf("blockers after closing bd-3: %v", got)
	}
	if list, _ := f.Ready(c); len(list) != 0 {
		t.Errorf("ready with bd-2 in progress: %v", ids(list))
	}
	if err := f.Close(c, b1, "done"); err != nil {
		t.Fatal(err)
	}
	if got := show().OpenBlockers(); len(got) != 0 {
		t.Errorf("blockers after closing both: %v", got)
	}
	if list, _ := f.Ready(c); !slices.Equal(ids(list), []string{a}) {
		t.Errorf("ready: %v", ids(list))
	}
}

// Older bd carries no status in a dependency: the client asks bd for it.
func TestClientOpenBlockersOlderShape(t *testing.T) {
	t.Parallel()
	old := func(to string) map[string]any {
		return map[string]any{"issue_id": "bd-1", "depends_on_id": to, "type": "blocks", "created_at": "2025-01-01T00:00:00Z", "created_by": "ann"}
	}
	b := fullBead("bd-1", map[string]any{"dependencies": []any{old("bd-2"), old("bd-3"), old("bd-404"), dep("bd-5", "blocked", "blocks")}})
	f := newFake(t, []Bead{b, fullBead("bd-2", map[string]any{"status": "closed"}), fullBead("bd-3", nil)})
	if got := b.OpenBlockers(); !slices.Equal(got, []string{"bd-2 (status unknown)", "bd-3 (status unknown)", "bd-404 (status unknown)", "bd-5 (blocked)"}) {
		t.Errorf("from the bead alone: %v", got)
	}
	got, err := f.OpenBlockers(ctx(t), b)
	if err != nil || !slices.Equal(got, []string{"bd-3 (open)", "bd-404 (status unknown)", "bd-5 (blocked)"}) {
		t.Errorf("through bd: %v, %v", got, err)
	}
	want := [][]string{{"show", "bd-2", "--json"}, {"show", "bd-3", "--json"}, {"show", "bd-404", "--json"}}
	if calls := f.calls(); !reflect.DeepEqual(calls, want) {
		t.Errorf("calls %q", calls)
	}
}

// Runs side by side update the same database: the fake bd loses none.
func TestFakeBDSerializesCalls(t *testing.T) {
	t.Parallel()
	var beads []Bead
	for i := 1; i <= 8; i++ {
		beads = append(beads, fullBead(fmt.Sprintf("bd-%d", i), nil))
	}
	f := newFake(t, beads)
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, len(beads))
	for _, b := range beads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- f.SetStatus(c, b.ID(), StatusInProgress)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range beads {
		if got := f.stored(b.ID()).Status(); got != StatusInProgress {
			t.Errorf("%s: %q", b.ID(), got)
		}
	}
	if n := len(f.calls()); n != len(beads) {
		t.Errorf("%d calls logged", n)
	}
}

// Without FAKEBD_LIVE_DEPS the fake shows dependencies as written, so a
// test decides what a bead says of its blockers; ready reads the database.
func TestFakeBDShowsDependenciesAsWritten(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{
		fullBead("bd-1", map[string]any{"dependencies": []any{dep("bd-2", "open", "blocks")}}),
		fullBead("bd-2", map[string]any{"status": "closed"}),
	})
	c := ctx(t)
	b, err := f.Show(c, "bd-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.OpenBlockers(); !slices.Equal(got, []string{"bd-2 (open)"}) {
		t.Errorf("blockers %v", got)
	}
	if list, err := f.Ready(c); err != nil || !slices.Equal(ids(list), []string{"bd-1"}) {
		t.Errorf("ready %v, %v", ids(list), err)
	}
}
