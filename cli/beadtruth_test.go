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

// dbBead is bead id as the fake bd's database holds it.
func (p *beadProject) dbBead(id string) map[string]any {
	p.t.Helper()
	data, err := os.ReadFile(p.db)
	if err != nil {
		p.t.Fatal(err)
	}
	var db map[string]map[string]any
	if err := json.Unmarshal(data, &db); err != nil {
		p.t.Fatal(err)
	}
	return db[id]
}

// A closed bead is refused (exit 2) with its close reason, and stays as
// it was; --force works on it again and closes it anew.
func TestBeadRunRefusesAClosedBead(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "Done already", map[string]any{"status": "closed", "close_reason": "Shipped in v2"}))
	p.write(".vibeteam/grimoires/one.yaml", oneStepGrimoire)
	r := p.bdExec("run", "one", "--bead", "bd-1")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "bead bd-1 is closed (Shipped in v2)") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("refusal:\n%s", r.stderr)
	}
	if b := p.dbBead("bd-1"); b["status"] != "closed" || b["close_reason"] != "Shipped in v2" {
		t.Errorf("the closed bead changed: %v", b)
	}
	if n := len(p.sessions()); n != 0 {
		t.Errorf("%d session(s) made for a refused bead", n)
	}
	r = p.bdExec("run", "one", "--bead", "bd-1", "--force")
	wantCode(t, r, 0)
	if b := p.dbBead("bd-1"); b["status"] != "closed" || !strings.HasPrefix(b["close_reason"].(string), "Completed by vibeteam") {
		t.Errorf("after a forced run: %v", b)
	}
}

// The run claims its bead (bd update --claim), never sets in_progress
// over another's claim: a bead claimed by another, or open and assigned to
// another, is refused naming them (exit 2) and left as it was; --force
// works on it anyway.
func TestBeadRunClaimsAndRefusesAnothersClaim(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t,
		bead("bd-1", "Free", nil),
		bead("bd-2", "Alice's", map[string]any{"status": "in_progress", "assignee": "alice"}),
		bead("bd-3", "Bob's", map[string]any{"assignee": "bob"}),
	)
	p.write(".vibeteam/grimoires/one.yaml", oneStepGrimoire)
	r := p.bdExec("run", "one", "--bead", "bd-1")
	wantCode(t, r, 0)
	calls := strings.Join(p.bdCalls(), "\n")
	if !strings.Contains(calls, "update bd-1 --claim --json") || strings.Contains(calls, "--status in_progress") {
		t.Errorf("the bead was not claimed (or set in_progress besides):\n%s", calls)
	}
	if b := p.dbBead("bd-1"); b["status"] != "closed" || b["assignee"] != "tester" {
		t.Errorf("bd-1 after its run: %v", b)
	}
	for id, who := range map[string]string{"bd-2": "alice", "bd-3": "bob"} {
		before := p.dbBead(id)
		r = p.bdExec("run", "one", "--bead", id)
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, "bead "+id+" is claimed by "+who) || !strings.Contains(r.stderr, "--force") {
			t.Errorf("%s: refusal:\n%s", id, r.stderr)
		}
		if after := p.dbBead(id); after["status"] != before["status"] || after["assignee"] != who {
			t.Errorf("%s changed: %v", id, after)
		}
	}
	r = p.bdExec("run", "one", "--bead", "bd-2", "--force")
	wantCode(t, r, 0)
	if b := p.dbBead("bd-2"); b["status"] != "closed" {
		t.Errorf("bd-2 after a forced run: %v", b)
	}
}

// An epic with open children is refused (exit 2), listing them, before
// anything runs: its children are the work, and bd would not close it.
func TestBeadRunRefusesAnEpicWithOpenChildren(t *testing.T) {
	t.Parallel()
	child := func(status string) map[string]any {
		return map[string]any{"status": status, "dependencies": []any{blockedBy("bd-5", "open", "parent-child")}}
	}
	p := newBeadProject(t,
		bead("bd-5", "The epic", map[string]any{"issue_type": "epic"}),
		bead("bd-5.1", "Open child", child("open")),
		bead("bd-5.2", "Closed child", child("closed")),
	)
	p.write(".vibeteam/grimoires/one.yaml", oneStepGrimoire)
	r := p.bdExec("run", "one", "--bead", "bd-5")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "bead bd-5 is an epic with 1 open child issue(s)") || !strings.Contains(r.stderr, "bd-5.1 (open) Open child") ||
		strings.Contains(r.stderr, "bd-5.2") {
		t.Errorf("refusal:\n%s", r.stderr)
	}
	if b := p.dbBead("bd-5"); b["status"] != "open" || len(p.sessions()) != 0 {
		t.Errorf("the epic was touched: %v, %d session(s)", b, len(p.sessions()))
	}
}
