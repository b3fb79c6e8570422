package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// topKeys are the keys of a JSON object line, in order, duplicates kept.
func topKeys(t *testing.T, line []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", line)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// Every event line of a --ready run names its bead once: workflow.started
// carries "bead" itself and was tagged with a second one.
func TestReadyEventsNameTheBeadOnce(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t, bead("bd-1", "One", nil))
	events := filepath.Join(t.TempDir(), "events.jsonl")
	r := p.bdExec("run", "--ready", "--headless", "--events", events, "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 0)
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	started := 0
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		keys := topKeys(t, l)
		n := 0
		for _, k := range keys {
			if k == "bead" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d \"bead\" keys in %s", n, l)
		}
		if bytes.Contains(l, []byte(`"event":"workflow.started"`)) {
			started++
		}
	}
	if started != 1 {
		t.Errorf("%d workflow.started events, want 1:\n%s", started, data)
	}
}

// A --ready run where bd has no database (no bd init) fails saying bd's
// own words; sessions lists it as failed with that cause, and not as
// waiting for a resume that would fail the same way.
func TestReadyWithoutBDInitIsListedAsFailed(t *testing.T) {
	t.Parallel()
	p, _ := newBacklogProject(t)
	cmd := p.command("run", "--ready", "--headless")
	cmd.Env = append(cmd.Env, "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB=")
	r := runResult(t, cmd)
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "bd: no beads database found") {
		t.Errorf("bd's cause is not said:\n%s", r.stderr)
	}
	out := p.exec("sessions")
	wantCode(t, out, 0)
	if strings.Contains(out.stdout, "waiting for you") || !strings.Contains(out.stdout, "failed: bd: no beads database found") {
		t.Errorf("sessions:\n%s", out.stdout)
	}
}

// Without bd, run --ready says it needs bd itself (what to install), not
// that a --bead-file would do.
func TestReadyWithoutBDSaysWhatCanWork(t *testing.T) {
	t.Parallel()
	p, _ := newBacklogProject(t, bead("bd-1", "One", nil))
	cmd := p.command("run", "--ready", "--headless")
	cmd.Env = append(cmd.Env, "PATH=/usr/bin:/bin")
	r := runResult(t, cmd)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "run --ready needs bd itself") || !strings.Contains(r.stderr, "npm install -g @beads/bd") ||
		strings.Contains(r.stderr, "or give the bead as a JSON file with --bead-file") {
		t.Errorf("no bd:\n%s", r.stderr)
	}
}

// bd ready output with an item without an id (and one without a
// priority): ready leaves the first out with a warning, shows "-" for the
// missing priority, and never a row with an empty id or <nil>.
func TestReadyLeavesOutMalformedBeads(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "Good", nil))
	data, _ := os.ReadFile(p.db)
	var db map[string]any
	_ = json.Unmarshal(data, &db)
	db["x"] = map[string]any{"title": "No id", "status": "open"}
	db["bd-2"] = map[string]any{"id": "bd-2", "title": "No priority", "status": "open", "issue_type": "task"}
	data, _ = json.Marshal(db)
	if err := os.WriteFile(p.db, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.bdExec("ready")
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "<nil>") || strings.Contains(r.stdout, "No id") {
		t.Errorf("ready shows a malformed row:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "warning: bd ready --json --limit 0: item 1 has no id; left out") {
		t.Errorf("no warning:\n%s", r.stderr)
	}
	var line string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "bd-2 ") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) < 3 || f[2] != "-" {
		t.Errorf("bd-2's row %q, want priority -:\n%s", line, r.stdout)
	}
	r = p.bdExec("ready", "--json")
	wantCode(t, r, 0)
	var rows []readyBead
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("ready --json: %v\n%s", err, r.stdout)
	}
}
