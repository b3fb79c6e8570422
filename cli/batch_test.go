package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// batchProject is n beads whose work writes bd-N.txt (bd-red's a little
// later than the others, so that it is not the first merge, which lands
// alone), merged through a gate that appends a line to gateLog on each run,
// sleeps pause seconds and fails when the tree holds red's file, or
// (flaky) fails once, on its flaky-th run.
func batchProject(t *testing.T, n int, red string, pause string, flaky int, config string) (p *beadProject, logPath, gateLog, eventsPath string) {
	t.Helper()
	var list []map[string]any
	for i := 1; i <= n; i++ {
		list = append(list, bead(fmt.Sprintf("bd-%d", i), fmt.Sprintf("Bead %d", i), nil))
	}
	p, logPath = newBacklogProject(t, list...)
	dir := t.TempDir()
	gateLog, eventsPath = filepath.Join(dir, "gate.log"), filepath.Join(dir, "events.jsonl")
	grimoire := strings.Replace(backlogGrimoire, "require_review: false", "require_review: false\n    gate: true", 1)
	if red != "" {
		grimoire = strings.Replace(grimoire, "sleep {{.pause}}", `sleep {{.pause}}; if [ {{.bead.id}} = `+red+` ]; then sleep 0.3; fi`, 1)
	}
	p.write(".vibeteam/grimoires/ship.yaml", grimoire)
	gate := fmt.Sprintf(`echo run >> %s; sleep %s`, gateLog, pause)
	if red != "" {
		gate += fmt.Sprintf(`; ! test -f %s.txt || { echo 'FAIL: %s breaks the build'; exit 1; }`, red, red)
	}
	if flaky > 0 {
		gate += fmt.Sprintf(`; [ "$(wc -l < %s)" -ne %d ] || { echo 'FAIL: flaky'; exit 1; }`, gateLog, flaky)
	}
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\nmerge:\n  gate: "+yamlQuote(gate)+"\n"+config)
	return p, logPath, gateLog, eventsPath
}

func yamlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// lineCount is how many lines the file has (0 when it does not exist).
func lineCount(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// beadSessions are the beads' sessions (not the backlog's), by bead id.
func (p *beadProject) beadSessions() map[string]*state.Session {
	p.t.Helper()
	out := map[string]*state.Session{}
	for _, s := range p.sessions() {
		if s.Backlog == nil {
			id, _ := s.Bead["id"].(string)
			out[id] = s
		}
	}
	return out
}

// 16 beads wait together for a slow gate: they land in batches, each
// candidate gated once; the red bead is found by bisection and blocks;
// the 15 others land once each, every one with its own merge commit.
func TestReadyBatchesTheMergesAndBisectsTheRedOne(t *testing.T) {
	t.Parallel()
	p, logPath, gateLog, eventsPath := batchProject(t, 16, "bd-7", "1", 0, "  batch: 4\n")
	r := p.bdExec("run", "--ready", "--jobs", "16", "--headless", "--events", eventsPath, "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 3)

	merges := p.mergesOf()
	for i := 1; i <= 16; i++ {
		id := fmt.Sprintf("bd-%d", i)
		want := 1
		if id == "bd-7" {
			want = 0
		}
		if merges[id] != want {
			t.Errorf("%s merged %d times, want %d (all: %v)", id, merges[id], want, merges)
		}
	}
	// One merge commit per bead on main's first-parent line, each its
	// bead's session's own.
	firstParent := strings.Fields(p.git("log", "--first-parent", "--merges", "--format=%H", "main"))
	if len(firstParent) != 15 {
		t.Errorf("%d merge commits on main's first-parent line, want 15", len(firstParent))
	}
	sessions := p.beadSessions()
	seen := map[string]string{}
	for id, s := range sessions {
		if id == "bd-7" {
			continue
		}
		if s.Status != state.StatusCompleted || s.Merged == "" {
			t.Errorf("%s: %s, merged %q", id, s.Status, s.Merged)
			continue
		}
		if other, ok := seen[s.Merged]; ok {
			t.Errorf("%s and %s record the same merge commit %s", id, other, s.Merged)
		}
		seen[s.Merged] = id
		if body := p.git("log", "-1", "--format=%b", s.Merged); !strings.Contains(body, "Bead "+id+",") {
			t.Errorf("%s records merge commit %s, which is not its own:\n%s", id, s.Merged, body)
		}
		if p.git("merge-base", "--is-ancestor", s.Merged, "main") != "" {
			t.Errorf("%s's merge commit is not on main", id)
		}
	}
	// The red one is blocked, says why, and names the batch it was found in.
	red := sessions["bd-7"]
	if red == nil || red.Status != state.StatusBlocked || red.BlockedReason != "merge_gate_red" {
		t.Fatalf("bd-7: %+v\n%s", red, r.stderr)
	}
	raw, err := json.Marshal(red)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "FAIL: bd-7 breaks the build") || !strings.Contains(string(raw), "found red in the batch") {
		t.Errorf("bd-7's session does not give the gate's output and the batch:\n%s", raw)
	}
	// The base's final tree passes the gate: the 15 files, not the red one.
	tree := strings.Fields(p.git("ls-tree", "--name-only", "main"))
	for i := 1; i <= 16; i++ {
		has := slices.Contains(tree, fmt.Sprintf("bd-%d.txt", i))
		if has != (i != 7) {
			t.Errorf("main's tree has bd-%d.txt: %v\n%s", i, has, tree)
		}
	}
	// Gate runs: as the gate counted them and as the events say.
	runs := lineCount(t, gateLog)
	events, err := os.ReadFile(eventsPath)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Count(string(events), `"workflow.gate_started"`)
	t.Logf("%d gate runs for 16 beads; %d batch events", runs, strings.Count(string(events), `"workflow.merge_batch"`))
	if runs != started {
		t.Errorf("the gate ran %d times, the events say %d", runs, started)
	}
	if runs > 10 || runs < 2 {
		t.Errorf("%d gate runs for 16 beads in batches of 4, want at most 10", runs)
	}
	// The red bead is found by bisection when it was gated in a batch of
	// several; on a loaded machine it may come late enough to be gated
	// alone (its work sleeps longer), and is found red by itself then.
	batched := batchedWith(t, events, "bd-7")
	t.Logf("bd-7 gated in a batch of several: %v", batched)
	if batched && !strings.Contains(string(events), `"phase":"bisected"`) {
		t.Error("bd-7 was in a batch of several, and no batch was bisected")
	}
}

// batchedWith reports whether a workflow.merge_batch event (a batch of
// several merges) of the --events file holds bead's branch.
func batchedWith(t *testing.T, events []byte, bead string) bool {
	t.Helper()
	var branchesOf func(v any) []any
	branchesOf = func(v any) []any {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		if b, ok := m["branches"].([]any); ok {
			return b
		}
		for _, child := range m {
			if b := branchesOf(child); b != nil {
				return b
			}
		}
		return nil
	}
	for _, line := range strings.Split(string(events), "\n") {
		if !strings.Contains(line, `"workflow.merge_batch"`) {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("an --events line is not JSON: %v\n%s", err, line)
		}
		for _, b := range branchesOf(ev) {
			if name, _ := b.(string); strings.HasSuffix(name, bead) && len(branchesOf(ev)) > 1 {
				return true
			}
		}
	}
	return false
}

// A gate that fails once, at random, with gate_retries: 1: no bead is
// blocked for it.
func TestReadyGateRetriesAFlakyRed(t *testing.T) {
	t.Parallel()
	for _, flaky := range []int{1, 3} {
		p, logPath, gateLog, _ := batchProject(t, 6, "", "0.1", flaky, "  batch: 4\n  gate_retries: 1\n")
		r := p.bdExec("run", "--ready", "--jobs", "6", "--headless", "--set", "log="+logPath, "--set", "pause=0")
		wantCode(t, r, 0)
		if runs := lineCount(t, gateLog); runs < flaky {
			t.Errorf("the gate ran %d times; the flaky failure was on run %d", runs, flaky)
		}
		for id, n := range p.mergesOf() {
			if n != 1 {
				t.Errorf("%s merged %d times", id, n)
			}
		}
		if len(p.mergesOf()) != 6 {
			t.Errorf("merges %v", p.mergesOf())
		}
	}
}
