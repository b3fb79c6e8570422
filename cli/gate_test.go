package cli

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// gateGrimoire writes a grimoire whose work step writes <bead id>.txt in
// the worktree and whose merge step has gateLine (" gate: ..." lines).
func gateGrimoire(p *beadProject, gateLines string) {
	p.write(".vibeteam/grimoires/ship.yaml", `name: ship
steps:
  - name: work
    type: script
    command: echo {{.bead.title}} > {{.bead.id}}.txt
  - name: merge
    type: merge
    require_review: false
`+gateLines)
}

func eventsOf(evs []state.Event, typ string) []state.Event {
	var out []state.Event
	for _, e := range evs {
		if e.Kind() == typ {
			out = append(out, e)
		}
	}
	return out
}

// gateDirsLeft lists the gate worktrees left in the repository.
func gateDirsLeft(p *beadProject) string {
	var left []string
	if strings.Contains(p.git("worktree", "list"), ".gate-") {
		left = append(left, "git worktree list:\n"+p.git("worktree", "list"))
	}
	if d, _ := filepath.Glob(p.path(".worktrees/.gate-*")); len(d) > 0 {
		left = append(left, strings.Join(d, " "))
	}
	return strings.Join(left, "\n")
}

// A red gate blocks the bead with the gate's output, and the base never
// gets the work; once the work is fixed in the worktree, a resume runs the
// gate again and lands it.
func TestGateRedBlocksTheBeadAndTheBaseKeepsWhatItHad(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write("bead.json", `{"id":"bd-7","title":"The feature","status":"open"}`)
	// The default gate of config.yaml, taken by gate: true.
	p.write(".vibeteam/config.yaml", "merge:\n  gate: |\n    cat bd-7.txt\n    for i in $(seq 1 40); do echo \"ok $i\"; done\n    if [ -f fixed.txt ]; then echo all good; exit 0; fi\n    echo '--- FAIL: TestFeature (0.01s)'\n    echo 'feature_test.go:12: fixed.txt is missing'\n    exit 1\n")
	gateGrimoire(p, "    gate: true\n")
	mainBefore := p.git("rev-parse", "main")

	r := p.exec("run", "ship", "--bead-file", "bead.json")
	wantCode(t, r, 3)
	s := p.only()
	if s.Status != state.StatusBlocked || s.BlockedReason != "merge_gate_red" || s.Merged != "" {
		t.Fatalf("status %s, blocked %q, merged %q\n%s", s.Status, s.BlockedReason, s.Merged, r.stderr)
	}
	// Its failures (further up than the tail) and its last lines.
	for _, want := range []string{"--- FAIL: TestFeature", "feature_test.go:12: fixed.txt is missing", "ok 40"} {
		if !strings.Contains(s.BlockedContext, want) {
			t.Errorf("blocked_context lacks %q:\n%s", want, s.BlockedContext)
		}
	}
	if got := p.git("rev-parse", "main"); got != mainBefore {
		t.Fatalf("main moved to %s after a red gate", got)
	}
	if p.exists("bd-7.txt") {
		t.Fatal("the user's checkout got the work")
	}
	if left := gateDirsLeft(p); left != "" {
		t.Fatalf("gate worktree left: %s", left)
	}
	if !p.exists(".worktrees/bd-7/bd-7.txt") {
		t.Fatal("the bead's worktree is gone")
	}
	if len(s.Gates) != 1 || s.Gates[0].Green || s.Gates[0].ExitCode != 1 || s.Gates[0].DurationMS <= 0 || s.Gates[0].LogPath == "" {
		t.Fatalf("gate runs %+v", s.Gates)
	}
	if log, err := os.ReadFile(s.Gates[0].LogPath); err != nil || !strings.Contains(string(log), "The feature") || !strings.Contains(string(log), "--- FAIL") {
		t.Fatalf("gate log %q, %v", log, err)
	}
	// The gate ran on the merged result: main's files and the bead's.
	evs := p.events(s.ID)
	starts, ends := eventsOf(evs, events.GateStarted), eventsOf(evs, events.GateFinished)
	if len(starts) != 1 || len(ends) != 1 || ends[0].Fields()["green"] != false || ends[0].Fields()["exit_code"] != float64(1) {
		t.Fatalf("gate events: %v / %v", starts, ends)
	}
	if c := starts[0].Fields()["base_commit"]; c != mainBefore {
		t.Errorf("the gate checked a merge on %v, main is %s", c, mainBefore)
	}

	show := p.exec("show", s.ID)
	wantCode(t, show, 0)
	for _, want := range []string{"gate      ✗ merge: gate red (exit 1) after", "blocked   merge_gate_red", "| --- FAIL: TestFeature", "--approve-merge"} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, show.stdout)
		}
	}
	lg := p.exec("log", s.ID)
	wantCode(t, lg, 0)
	for _, want := range []string{"▸ gate (cat bd-7.txt …) checks vibeteam/bd-7 merged into main", "✗ gate red (exit 1) after", "workflow blocked at merge (1): merge_gate_red"} {
		if !strings.Contains(lg.stdout, want) {
			t.Errorf("log lacks %q:\n%s", want, lg.stdout)
		}
	}

	// Fixed in the worktree; the resume gates the new merge and lands it.
	p.write(".worktrees/bd-7/fixed.txt", "yes\n")
	r = p.exec("resume", s.ID, "--approve-merge")
	wantCode(t, r, 0)
	s = p.only()
	if s.Status != state.StatusCompleted || s.Merged == "" || p.git("rev-parse", "main") != s.Merged {
		t.Fatalf("after the fix: status %s, merged %q\n%s", s.Status, s.Merged, r.stderr)
	}
	if len(s.Gates) != 2 || !s.Gates[1].Green || s.Gates[1].Commit != s.Merged {
		t.Fatalf("gate runs %+v, merged %s", s.Gates, s.Merged)
	}
	if got := p.git("show", "main:fixed.txt"); got != "yes" {
		t.Errorf("main:fixed.txt = %q", got)
	}
	if left := gateDirsLeft(p); left != "" {
		t.Fatalf("gate worktree left: %s", left)
	}
}

// The base moves while the gate runs (the gate itself commits to main in
// the user's checkout the first time): the merge is done again on the new
// base, the gate runs again on it, and main ends with both.
func TestGateBaseMovesDuringTheGate(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write("bead.json", `{"id":"bd-8","title":"Mine","status":"open"}`)
	mark := filepath.Join(t.TempDir(), "moved")
	gateGrimoire(p, "    gate: |\n"+
		"      if [ ! -e "+mark+" ]; then\n        : > "+mark+"\n"+
		"        echo theirs > "+p.path("user.txt")+"\n"+
		"        git -C "+p.dir+" add user.txt && git -C "+p.dir+" -c user.name=u -c user.email=u@u commit -q -m 'the user commits meanwhile'\n"+
		"      fi\n      test -f bd-8.txt\n")
	r := p.exec("run", "ship", "--bead-file", "bead.json")
	wantCode(t, r, 0)
	s := p.only()
	if s.Status != state.StatusCompleted || s.Merged == "" {
		t.Fatalf("status %s merged %q\n%s", s.Status, s.Merged, r.stderr)
	}
	user := p.git("log", "--format=%H", "-1", "--grep", "the user commits meanwhile", "main")
	if user == "" {
		t.Fatal("the gate's commit is not on main")
	}
	if parents := strings.Fields(p.git("log", "-1", "--format=%P", s.Merged)); len(parents) != 2 || parents[0] != user {
		t.Fatalf("the merge's parents are %v; the first must be the commit made during the gate, %s", parents, user)
	}
	if main := p.git("rev-parse", "main"); main != s.Merged {
		t.Fatalf("main is %s, the merge %s", main, s.Merged)
	}
	files := p.git("ls-tree", "--name-only", "main")
	if !strings.Contains(files, "user.txt") || !strings.Contains(files, "bd-8.txt") {
		t.Fatalf("main has %q", files)
	}
	evs := p.events(s.ID)
	starts := eventsOf(evs, events.GateStarted)
	if len(starts) != 2 || starts[1].Fields()["attempt"] != float64(2) || starts[1].Fields()["base_commit"] != user || starts[1].Fields()["commit"] != s.Merged {
		t.Fatalf("gate starts: %v (the user's commit %s, merged %s)", starts, user, s.Merged)
	}
	if len(s.Gates) != 2 || !s.Gates[0].Green || !s.Gates[1].Green || s.Gates[1].BaseCommit != user {
		t.Fatalf("gate runs %+v", s.Gates)
	}
	show := p.exec("show", s.ID)
	if !strings.Contains(show.stdout, "gate      ✓ merge: gate green in") || !strings.Contains(show.stdout, "(try 2)") {
		t.Errorf("show:\n%s", show.stdout)
	}
	if left := gateDirsLeft(p); left != "" {
		t.Fatalf("gate worktree left: %s", left)
	}
	if st := p.git("status", "--porcelain"); st != "?? bead.json" {
		t.Errorf("git status %q", st)
	}
}

// Two vibeteam processes merging at once share the repository's queue:
// the second waits while the first's gate runs, its gate then sees the
// first's landed work, and both land.
func TestGateQueueAcrossProcesses(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write("a.json", `{"id":"bd-a","title":"A","status":"open"}`)
	p.write("b.json", `{"id":"bd-b","title":"B","status":"open"}`)
	tmp := t.TempDir()
	order, first, release := filepath.Join(tmp, "order"), filepath.Join(tmp, "first"), filepath.Join(tmp, "go")
	// The first gate to run holds the queue until the test releases it
	// (bounded: 30 s).
	gateGrimoire(p, "    gate: |\n"+
		"      echo \"start $VIBETEAM_GATE_BRANCH\" >> "+order+"\n"+
		"      git ls-files > "+tmp+"/seen-$(basename $VIBETEAM_GATE_BRANCH)\n"+
		"      if ( set -C; : > "+first+" ) 2>/dev/null; then\n"+
		"        i=0; while [ ! -e "+release+" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n"+
		"      fi\n"+
		"      echo \"end $VIBETEAM_GATE_BRANCH\" >> "+order+"\n")

	var wg sync.WaitGroup
	results := map[string]result{}
	var mu sync.Mutex
	for _, f := range []string{"a.json", "b.json"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.exec("run", "ship", "--bead-file", f)
			mu.Lock()
			results[f] = r
			mu.Unlock()
		}()
	}
	// Wait until one merge waits in the queue while the other's gate runs.
	deadline := time.Now().Add(30 * time.Second)
	queued := ""
	for queued == "" && time.Now().Before(deadline) {
		for _, s := range p.sessions() {
			evs, _ := state.ReadEvents(state.NewManager(p.dir).EventLogPath(s.ID))
			if len(eventsOf(evs, events.MergeQueued)) > 0 {
				queued = s.ID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if queued == "" {
		t.Fatal("no merge waited for the queue while the other's gate ran")
	}
	for f, r := range results {
		wantCode(t, r, 0)
		_ = f
	}
	orderData, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(orderData)), "\n")
	if len(got) != 4 || !strings.HasPrefix(got[0], "start ") || got[1] != "end"+got[0][5:] || !strings.HasPrefix(got[2], "start ") || got[3] != "end"+got[2][5:] || got[0] == got[2] {
		t.Fatalf("the gates overlapped or ran twice:\n%s", strings.Join(got, "\n"))
	}
	firstBranch, second := strings.TrimPrefix(got[0], "start "), strings.TrimPrefix(got[2], "start ")
	seen, err := os.ReadFile(filepath.Join(tmp, "seen-"+filepath.Base(second)))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Base(firstBranch) + ".txt"; !strings.Contains(string(seen), want) {
		t.Fatalf("the second gate (%s) did not see %s, landed by the first:\n%s", second, want, seen)
	}
	files := p.git("ls-tree", "--name-only", "main")
	if !strings.Contains(files, "bd-a.txt") || !strings.Contains(files, "bd-b.txt") {
		t.Fatalf("main has %q", files)
	}
	if merges := strings.Fields(p.git("rev-list", "--first-parent", "--merges", "main")); len(merges) != 2 {
		t.Fatalf("%d merges on main", len(merges))
	}
	for _, s := range p.sessions() {
		if s.Status != state.StatusCompleted || len(s.Gates) != 1 || !s.Gates[0].Green {
			t.Errorf("session %s: %s, gates %+v", s.ID, s.Status, s.Gates)
		}
		if s.ID == queued && !strings.Contains(p.exec("log", s.ID).stdout, "waiting for the merge queue: another merge into main is under way") {
			t.Errorf("log of %s does not say it waited", s.ID)
		}
		if s.ID == queued {
			// Its merge says how long it waited (the other's gate held the
			// queue while the test looked).
			evs, _ := state.ReadEvents(state.NewManager(p.dir).EventLogPath(s.ID))
			done := eventsOf(evs, events.Merged)
			if len(done) != 1 {
				t.Fatalf("%d workflow.merged events", len(done))
			}
			if m, ok := done[0].Payload.(events.MergeDone); !ok || m.QueuedMS <= 0 {
				t.Errorf("the queued merge's workflow.merged does not say it waited: %+v", done)
			}
		}
	}
	if left := gateDirsLeft(p); left != "" {
		t.Fatalf("gate worktree left: %s", left)
	}
}
