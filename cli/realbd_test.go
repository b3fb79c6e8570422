package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The real bd's ways (../shared/BEADS.md), as a user of vibeteam meets them.

// dbStatus is bead id's status in the fake bd's database.
func (p *beadProject) dbStatus(id string) string {
	p.t.Helper()
	data, err := os.ReadFile(p.db)
	if err != nil {
		p.t.Fatal(err)
	}
	var db map[string]map[string]any
	if err := json.Unmarshal(data, &db); err != nil {
		p.t.Fatal(err)
	}
	s, _ := db[id]["status"].(string)
	return s
}

const oneStepGrimoire = "name: one\nsteps:\n  - name: s\n    type: script\n    command: echo {{.bead.id}}\n"

func blockedBy(id, status, typ string) map[string]any {
	return map[string]any{"id": id, "title": "t " + id, "status": status, "dependency_type": typ}
}

// bd close refuses a bead with open blockers: a run started with --force
// closes its bead with --force, and the bead does not stay in_progress.
func TestForcedBeadRunClosesItsBead(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t,
		bead("bd-1", "Blocked", map[string]any{"dependencies": []any{blockedBy("bd-2", "open", "blocks")}}),
		bead("bd-2", "Open blocker", nil),
	)
	p.write(".vibeteam/grimoires/one.yaml", oneStepGrimoire)
	r := p.bdExec("run", "one", "--bead", "bd-1")
	wantCode(t, r, 2)
	r = p.bdExec("run", "one", "--bead", "bd-1", "--force")
	wantCode(t, r, 0)
	if got := p.dbStatus("bd-1"); got != "closed" {
		t.Errorf("bead bd-1 is %q after a completed forced run, want closed\n%s", got, r.stderr)
	}
	if calls := strings.Join(p.bdCalls(), "\n"); !strings.Contains(calls, "--force") {
		t.Errorf("bd close was not given --force:\n%s", calls)
	}
}

// Readiness is bd's: a bead whose blocker is pinned runs; the child of a
// blocked parent is refused, naming the parent.
func TestBeadReadinessIsBDs(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t,
		bead("bd-1", "Pinned blocker", map[string]any{"status": "pinned"}),
		bead("bd-2", "Blocked only by a pinned one", map[string]any{"dependencies": []any{blockedBy("bd-1", "pinned", "blocks")}}),
		bead("bd-3", "Open", nil),
		bead("bd-4", "Blocked epic", map[string]any{"issue_type": "epic", "dependencies": []any{blockedBy("bd-3", "open", "blocks")}}),
		bead("bd-4.1", "Child of a blocked epic", map[string]any{"dependencies": []any{blockedBy("bd-4", "open", "parent-child")}}),
	)
	p.write(".vibeteam/grimoires/one.yaml", oneStepGrimoire)
	r := p.bdExec("run", "one", "--bead", "bd-2")
	wantCode(t, r, 0)
	r = p.bdExec("run", "one", "--bead", "bd-4.1")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "bead bd-4.1 is blocked by bd-4 (open)") {
		t.Errorf("the child of a blocked parent:\n%s", r.stderr)
	}
	r = p.bdExec("preview", "one", "--bead", "bd-4.1")
	if !strings.Contains(r.stderr, "warning: bead bd-4.1 is blocked by bd-4 (open)") {
		t.Errorf("preview of the child of a blocked parent:\n%s", r.stderr)
	}
}

// vibeteam ready lists every ready bead (bd stops at 100 unless asked for
// all), and no epic: an epic is run only when named.
func TestReadyListsAllButEpics(t *testing.T) {
	t.Parallel()
	var list []map[string]any
	for i := 1; i <= 105; i++ {
		list = append(list, bead(fmt.Sprintf("bd-%d", i), "Bead", nil))
	}
	list = append(list, bead("bd-e", "An epic", map[string]any{"issue_type": "epic"}))
	p := newBeadProject(t, list...)
	r := p.bdExec("ready", "--json")
	wantCode(t, r, 0)
	var rows []readyBead
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 105 {
		t.Fatalf("ready: %d rows, %v", len(rows), err)
	}
	for _, row := range rows {
		if row.ID == "bd-e" {
			t.Error("ready lists the epic")
		}
	}
}

// coven's .coven/grimoire-matchers.yaml routes a bead by its tags before
// config.yaml's by-type rule; run and preview say which rule chose, and a
// bad file is an error at its file:line, exit 2.
func TestGrimoireMatchersRouteABead(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t,
		bead("bd-1", "Auth fix", map[string]any{"issue_type": "bug", "labels": []any{"auth-flow"}}),
		bead("bd-2", "Plain bug", map[string]any{"issue_type": "bug"}),
		bead("bd-3", "Another bug", map[string]any{"issue_type": "bug"}),
	)
	p.write(".coven/grimoire-matchers.yaml", "matchers:\n  - grimoire: one\n    any_tags: [\"auth*\"]\ndefault: implement-bead\n")
	p.write(".vibeteam/config.yaml", "grimoires:\n  by_type: {bug: by-type}\n")
	p.write(".vibeteam/grimoires/one.yaml", oneStepGrimoire)
	p.write(".vibeteam/grimoires/by-type.yaml", strings.Replace(oneStepGrimoire, "name: one", "name: by-type", 1))
	r := p.bdExec("preview", "--bead", "bd-1")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "bead bd-1: grimoire one (.coven/grimoire-matchers.yaml:2 matchers[0])") {
		t.Errorf("preview does not say the matcher chose:\n%s", r.stdout)
	}
	r = p.bdExec("run", "--bead", "bd-1")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "grimoire one (.coven/grimoire-matchers.yaml:2 matchers[0])") {
		t.Errorf("run does not say the matcher chose:\n%s", r.stderr)
	}
	r = p.bdExec("run", "--bead", "bd-2")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "grimoire by-type (.vibeteam/config.yaml grimoires.by_type.bug)") {
		t.Errorf("by type:\n%s", r.stderr)
	}
	// An open bead (bd-2 is closed now, and a closed bead is refused first).
	p.write(".coven/grimoire-matchers.yaml", "matchers:\n  - grimoire: one\n    any_tag: [auth]\n")
	r = p.bdExec("run", "--bead", "bd-3")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `.coven/grimoire-matchers.yaml:3:5: matchers[0]: unknown key "any_tag"`) {
		t.Errorf("bad matchers file:\n%s", r.stderr)
	}
}
