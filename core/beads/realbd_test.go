package beads

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The behaviours of the real bd 1.0.5 that ../shared/BEADS.md records, one
// test each: the fake bd has them, and the client copes with them.

// bd close refuses a bead with an open blocker unless --force; a client of
// a forced run closes with --force.
func TestRealBDCloseRefusesOpenBlockers(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{
		fullBead("bd-48f", map[string]any{"dependencies": []any{dep("bd-5wf", "open", "blocks")}}),
		fullBead("bd-5wf", nil),
	})
	c := ctx(t)
	err := f.Close(c, "bd-48f", "done")
	if err == nil || !strings.Contains(err.Error(), "cannot close bd-48f: blocked by open issues [bd-5wf] (use --force to override)") {
		t.Fatalf("close with an open blocker: %v", err)
	}
	if got := f.stored("bd-48f").Status(); got != StatusOpen {
		t.Fatalf("status %q after a refused close", got)
	}
	forced := *f.Client
	forced.Force = true
	if err := forced.Close(c, "bd-48f", "done"); err != nil {
		t.Fatal(err)
	}
	if got := f.stored("bd-48f").Status(); got != StatusClosed {
		t.Errorf("status %q after a forced close", got)
	}
	if got := f.calls(); !reflect.DeepEqual(got[len(got)-1], []string{"close", "bd-48f", "--reason", "done", "--force"}) {
		t.Errorf("last call %q", got[len(got)-1])
	}
}

// bd close refuses an epic with open children unless --force.
func TestRealBDCloseRefusesEpicWithOpenChildren(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	c := ctx(t)
	out, err := f.run(c, "create", "Epic", "-t", "epic", "--json")
	if err != nil {
		t.Fatal(err)
	}
	epic, err := parseBead(out)
	if err != nil {
		t.Fatal(err)
	}
	out, err = f.run(c, "create", "Child", "--parent", epic.ID(), "--json")
	if err != nil {
		t.Fatal(err)
	}
	child, _ := parseBead(out)
	if child.ID() != epic.ID()+".1" {
		t.Errorf("child id %q", child.ID())
	}
	err = f.Close(c, epic.ID(), "done")
	if err == nil || !strings.Contains(err.Error(), "cannot close epic "+epic.ID()+": 1 open child issue(s); close children first or use --force to override") {
		t.Fatalf("close of an epic with an open child: %v", err)
	}
	if err := f.Close(c, child.ID(), "done"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(c, epic.ID(), "done"); err != nil {
		t.Errorf("close of an epic whose children are closed: %v", err)
	}
}

// bd ready --json stops at 100 and says so only on stderr; the client asks
// for all (--limit 0).
func TestRealBDReadyStopsAt100(t *testing.T) {
	t.Parallel()
	var list []Bead
	for i := 1; i <= 105; i++ {
		list = append(list, fullBead(fmt.Sprintf("bd-%d", i), nil))
	}
	f := newFake(t, list)
	cmd := exec.Command(f.Bin, "ready", "--json")
	cmd.Env = f.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := parseBeads(out)
	if len(got) != 100 || !strings.Contains(stderr.String(), "Showing 100 of 105 issues") {
		t.Errorf("bd ready --json: %d beads, stderr %q", len(got), stderr.String())
	}
	all, err := f.Ready(ctx(t))
	if err != nil || len(all) != 105 {
		t.Errorf("Ready: %d beads, %v", len(all), err)
	}
}

// Readiness is bd's: a pinned blocker does not block; the child of a
// blocked parent is blocked; conditional-blocks and waits-for count. Ready
// and BlockedBy give bd's answer, which the bead's own dependencies do not.
func TestRealBDReadinessIsBDs(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{
		fullBead("bd-1", map[string]any{"status": "pinned"}),
		fullBead("bd-2", map[string]any{"dependencies": []any{dep("bd-1", "pinned", "blocks")}}),
		// An epic: bd 1.0.5 lets an epic block only an epic.
		fullBead("bd-3", map[string]any{"issue_type": "epic"}),
		fullBead("bd-4", map[string]any{"issue_type": "epic", "dependencies": []any{dep("bd-3", "open", "blocks")}}),
		fullBead("bd-4.1", map[string]any{"dependencies": []any{dep("bd-4", "open", "parent-child")}}),
		fullBead("bd-5", map[string]any{"dependencies": []any{dep("bd-3", "open", "conditional-blocks")}}),
		fullBead("bd-6", map[string]any{"dependencies": []any{dep("bd-3", "open", "waits-for")}}),
	})
	c := ctx(t)
	ready, err := f.Ready(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ready); !slices.Equal(got, []string{"bd-2", "bd-3"}) {
		t.Errorf("ready %v, want bd-2 (its blocker is pinned) and bd-3", got)
	}
	// bd 1.0.5 prints a ready bead's dependencies as the database's
	// edges, without their status; one without has none.
	for _, b := range ready {
		deps, _ := b["dependencies"].([]any)
		switch b.ID() {
		case "bd-2":
			var e map[string]any
			if len(deps) == 1 {
				e, _ = deps[0].(map[string]any)
			}
			if e == nil || e["issue_id"] != "bd-2" || e["depends_on_id"] != "bd-1" || e["type"] != "blocks" || e["status"] != nil {
				t.Errorf("bd ready printed bd-2's dependencies as %v", deps)
			}
		default:
			if deps != nil {
				t.Errorf("bd ready printed dependencies for %s: %v", b.ID(), deps)
			}
		}
	}
	for id, want := range map[string][]string{
		"bd-2":   nil,
		"bd-3":   nil,
		"bd-4":   {"bd-3 (open)"},
		"bd-4.1": {"bd-4 (open)"},
		"bd-5":   {"bd-3 (open)"},
		"bd-6":   {"bd-3 (open)"},
	} {
		b, err := f.Show(c, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.BlockedBy(c, b)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("BlockedBy(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	// The bead's own dependencies say otherwise: what a recomputation got wrong.
	b2, _ := f.Show(c, "bd-2")
	b41, _ := f.Show(c, "bd-4.1")
	if len(b2.OpenBlockers()) == 0 || len(b41.OpenBlockers()) != 0 {
		t.Errorf("recomputed: bd-2 %v, bd-4.1 %v", b2.OpenBlockers(), b41.OpenBlockers())
	}
}

// bd show omits empty fields, and has neither dependents nor comments.
func TestRealBDShowOmitsEmptyFields(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{
		fullBead("bd-1", map[string]any{"design": "", "assignee": "", "notes": "", "labels": []any{}, "dependents": []any{dep("bd-2", "open", "blocks")}, "comments": []any{"x"}}),
		fullBead("bd-2", map[string]any{"dependencies": []any{dep("bd-1", "open", "blocks")}}),
	})
	b, err := f.Show(ctx(t), "bd-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"design", "assignee", "notes", "labels", "dependencies", "dependents", "comments"} {
		if _, ok := b[k]; ok {
			t.Errorf("show printed %s", k)
		}
	}
	if b["dependent_count"] != float64(1) || b["comment_count"] != float64(0) || b.Title() != "Add a greeting" {
		t.Errorf("show: %v", b)
	}
}

// bd's error: exit 1, a line on stderr, and {"error":"…","schema_version":1}
// on stdout (or inside the envelope): the client reports bd's words.
func TestRealBDErrorShape(t *testing.T) {
	t.Parallel()
	for _, env := range []string{"", "BD_JSON_ENVELOPE=1"} {
		f := newFake(t, nil, env)
		cmd := exec.Command(f.Bin, "show", "bd-9", "--json")
		cmd.Env = f.Env
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("%s: exit %v", env, err)
		}
		var want any = map[string]any{"error": "no issues found matching the provided IDs", "schema_version": float64(1)}
		if env != "" {
			want = map[string]any{"data": map[string]any{"error": "no issues found matching the provided IDs"}, "schema_version": float64(1)}
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stdout %s", env, out)
		}
		if _, err := parseBead(out); err == nil || err.Error() != "reported an error: no issues found matching the provided IDs" {
			t.Errorf("%s: parse: %v", env, err)
		}
	}
	// The older object form is read as well.
	if _, err := parseBead([]byte(`{"schema_version":1,"error":{"message":"locked"}}`)); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("object error: %v", err)
	}
	// A bd that wrote nothing on stderr is reported by its JSON error.
	c := &Client{Bin: "sh"}
	_, err := c.run(ctx(t), "-c", `echo '{"error":"database is locked","schema_version":1}'; exit 1`)
	if err == nil || !strings.HasSuffix(err.Error(), ": database is locked") {
		t.Errorf("error from stdout: %v", err)
	}
}

// bd create --json prints the bead with schema_version inline: a bead, not
// an envelope.
func TestRealBDCreateSchemaVersion(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	out, err := f.run(ctx(t), "create", "Add greeting", "-t", "feature", "-p", "1", "-d", "Say hello", "-l", "grimoire:acc-flow", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"schema_version": 1`) {
		t.Errorf("create --json: %s", out)
	}
	b, err := parseBead(out)
	if err != nil || b.ID() != "bd-1" || b.Title() != "Add greeting" || b.Type() != "feature" || !slices.Equal(b.Labels(), []string{"grimoire:acc-flow"}) {
		t.Errorf("parsed %v, %v", b, err)
	}
}

// bd update --json prints an array of the bead, with started_at.
func TestRealBDUpdateJSON(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{fullBead("bd-1", nil)})
	out, err := f.run(ctx(t), "update", "bd-1", "--status", "in_progress", "--json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseBead(out)
	if err != nil || b.Status() != StatusInProgress || b["started_at"] == nil || !strings.HasPrefix(strings.TrimSpace(string(out)), "[") {
		t.Errorf("update --json: %s (%v)", out, err)
	}
}

// What bd says on stderr when it succeeds reaches Notice, line by line.
func TestBDNoticesAreKept(t *testing.T) {
	t.Parallel()
	var got []string
	c := &Client{Bin: "sh", Notice: func(l string) { got = append(got, l) }}
	out, err := c.run(ctx(t), "-c", `echo 'Showing 100 of 105 issues' >&2; echo; echo 'second' >&2; echo '[]'`)
	if err != nil || strings.TrimSpace(string(out)) != "[]" {
		t.Fatalf("%q, %v", out, err)
	}
	if strings.Join(got, "|") != "Showing 100 of 105 issues|second" {
		t.Errorf("notices %q", got)
	}
}

// bd 1.0.5 refuses a blocks dependency between an epic and a non-epic
// (what an epic blocks is an epic); other kinds of link are not checked.
func TestRealBDBlocksJoinsLikeKinds(t *testing.T) {
	t.Parallel()
	f := newFake(t, []Bead{
		fullBead("bd-1", map[string]any{"issue_type": "epic"}),
		fullBead("bd-2", map[string]any{"issue_type": "epic"}),
		fullBead("bd-3", map[string]any{"issue_type": "task"}),
	})
	c := ctx(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dep", "add", "bd-3", "bd-1"}, "tasks can only block other tasks, not epics"},
		{[]string{"dep", "add", "bd-1", "bd-3"}, "epics can only block other epics, not tasks"},
		{[]string{"dep", "add", "bd-2", "bd-1"}, ""},
		{[]string{"dep", "add", "bd-3", "bd-1", "--type", "waits-for"}, ""},
	} {
		_, err := f.run(c, tc.args...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
