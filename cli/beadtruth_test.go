package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
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

// A --ready run claims each bead it works (bd update --claim), skips with
// a line the one bd ready lists though another has it (open, assigned to
// alice), closes an epic after its last child so that what the epic
// blocked runs in the same run, and ends listing what is still blocked
// and by what.
func TestReadyClaimsSkipsAnothersClosesEpicsAndListsTheBlocked(t *testing.T) {
	t.Parallel()
	childOf := func(epic string) map[string]any {
		return map[string]any{"dependencies": []any{blockedBy(epic, "open", "parent-child")}}
	}
	// What bd 1.0.5 lets an epic block is an epic (a blocks dependency
	// joins two epics or two non-epics): bd-6 waits for bd-5, and its
	// child, blocked with its parent, becomes ready once bd-5 closes.
	nextEpic := blocks("bd-5")
	nextEpic["issue_type"] = "epic"
	p, logPath := newBacklogProject(t,
		bead("bd-1", "Free", nil),
		bead("bd-2", "Alice's", map[string]any{"assignee": "alice"}),
		bead("bd-3", "Bob's", map[string]any{"status": "in_progress", "assignee": "bob"}),
		bead("bd-5", "The epic", map[string]any{"issue_type": "epic"}),
		bead("bd-5.1", "First child", childOf("bd-5")),
		bead("bd-5.2", "Second child", childOf("bd-5")),
		bead("bd-6", "The epic after the epic", nextEpic),
		bead("bd-6.1", "Child of the next epic", childOf("bd-6")),
		bead("bd-7", "Waits for Bob", blocks("bd-3")),
	)
	r := p.bdExec("run", "--ready", "--jobs", "2", "--headless", "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 0)
	for _, id := range []string{"bd-1", "bd-5.1", "bd-5.2", "bd-6.1"} {
		if b := p.dbBead(id); b["status"] != "closed" || b["assignee"] != "tester" {
			t.Errorf("%s after the run: %v", id, b)
		}
	}
	for _, id := range []string{"bd-5", "bd-6"} {
		if b := p.dbBead(id); b["status"] != "closed" || !strings.Contains(fmt.Sprint(b["close_reason"]), "All children completed") {
			t.Errorf("the epic %s after its last child: %v", id, b)
		}
	}
	for id, who := range map[string]string{"bd-2": "alice", "bd-3": "bob"} {
		if b := p.dbBead(id); b["assignee"] != who || b["status"] == "closed" {
			t.Errorf("%s, another's, was touched: %v", id, b)
		}
	}
	if !strings.Contains(r.stderr, "bead bd-2: skipped: bead bd-2 is claimed by alice") {
		t.Errorf("no line says bd-2 was skipped:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "still blocked") || !regexpMatch(`bd-7\s+Waits for Bob — blocked by bd-3`, r.stderr) {
		t.Errorf("the blocked bead is not listed with its blocker:\n%s", r.stderr)
	}
	calls := strings.Join(p.bdCalls(), "\n")
	if strings.Contains(calls, "--status in_progress") {
		t.Errorf("a bead was set in_progress rather than claimed:\n%s", calls)
	}
	for _, id := range []string{"bd-1", "bd-5.1", "bd-5.2", "bd-6.1", "bd-2"} {
		if !strings.Contains(calls, "update "+id+" --claim --json") {
			t.Errorf("%s was not claimed:\n%s", id, calls)
		}
	}
	for _, b := range p.backlogSession().Backlog.Beads {
		want := "completed"
		if b.ID == "bd-2" {
			want = "skipped"
		}
		if b.Status != want {
			t.Errorf("backlog record %s: %s (%s), want %s", b.ID, b.Status, b.Reason, want)
		}
	}
}

// A --ready run makes at most 2 bd calls a bead, amortized: one ready
// list and one show for them all, a claim each, closes a few at a time.
func TestReadyMakesFewBDCallsABead(t *testing.T) {
	t.Parallel()
	var list []map[string]any
	for i := 1; i <= 12; i++ {
		list = append(list, bead(fmt.Sprintf("bd-%d", i), "Bead", nil))
	}
	p, logPath := newBacklogProject(t, list...)
	r := p.bdExec("run", "--ready", "--jobs", "4", "--headless", "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 0)
	calls := p.bdCalls()
	if n := len(calls); n > 2*len(list) {
		t.Errorf("%d bd calls for %d beads (%.2f a bead), want at most 2 a bead:\n%s", n, len(list), float64(n)/float64(len(list)), strings.Join(calls, "\n"))
	}
	for i := 1; i <= 12; i++ {
		if b := p.dbBead(fmt.Sprintf("bd-%d", i)); b["status"] != "closed" {
			t.Errorf("bd-%d: %v", i, b)
		}
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// gatedGrimoire: bead bd-2's work waits for the file {{.go}}; the others'
// ends at once.
const gatedGrimoire = `name: ship
steps:
  - name: work
    type: script
    command: |
      if [ "{{.bead.id}}" = bd-2 ]; then while [ ! -f {{.go}} ]; do sleep 0.05; done; fi
      echo {{.bead.id}} > {{.bead.id}}.txt
  - name: merge
    type: merge
    require_review: false
`

// killedBacklog starts run --ready on bd-1 and bd-2 (gated), kills its
// whole process group once bd-1's session completed, and returns the
// backlog session, the env of the fake bd and the gate file.
func killedBacklog(t *testing.T, p *beadProject) (*state.Session, []string, string) {
	t.Helper()
	p.write(".vibeteam/grimoires/ship.yaml", gatedGrimoire)
	gate := filepath.Join(t.TempDir(), "go")
	env := []string{"PATH=" + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log}
	cmd := p.command("run", "--ready", "--jobs", "2", "--headless", "--set", "go="+gate)
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		for _, s := range p.sessions() {
			if s.Bead["id"] == "bd-1" && s.Status == state.StatusCompleted {
				return true
			}
		}
		return false
	})
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	return p.backlogSession(), env, gate
}

// A backlog killed after a bead's session completed, before bd heard of
// it: its resume closes that bead.
func TestReadyResumeClosesWhatCompletedBeforeAKill(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "One", nil), bead("bd-2", "Two", nil))
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\n")
	bl, env, gate := killedBacklog(t, p)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	resume := p.command("resume", bl.ID, "--headless")
	resume.Env = append(resume.Env, env...)
	r := runResult(t, resume)
	wantCode(t, r, 0)
	for _, id := range []string{"bd-1", "bd-2"} {
		if b := p.dbBead(id); b["status"] != "closed" || !strings.HasPrefix(b["close_reason"].(string), "Completed by vibeteam grimoire ship") {
			t.Errorf("%s after the resume: %v\n%s", id, b, r.stderr)
		}
	}
}

// When a bead's own session (resumed by hand) holds it as its backlog
// resumes, the backlog waits for it, and records how it ended there:
// completed, never skipped.
func TestReadyResumeRecordsWhatTheBeadsOwnSessionDid(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "One", nil), bead("bd-2", "Two", nil))
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\n")
	bl, env, gate := killedBacklog(t, p)
	var beadSession string
	for _, b := range bl.Backlog.Beads {
		if b.ID == "bd-2" {
			beadSession = b.Session
		}
	}
	if beadSession == "" {
		t.Fatalf("no session for bd-2 in %+v", bl.Backlog.Beads)
	}
	// Another process holds bd-2's session: this test, as a live pid.
	mgr := state.NewManager(p.dir)
	lock, err := mgr.Lock(beadSession)
	if err != nil {
		t.Fatal(err)
	}
	resume := p.command("resume", bl.ID, "--headless")
	resume.Env = append(resume.Env, env...)
	var errb syncBuffer
	resume.Stderr = &errb
	if err := resume.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- resume.Wait() }()
	waitFor(t, func() bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
		}
		return strings.Contains(errb.String(), "waiting for it to end")
	})
	// The other process completes the bead's session, and closes it.
	sess, err := mgr.Load(beadSession)
	if err != nil {
		t.Fatal(err)
	}
	sess.Status = state.StatusCompleted
	if err := mgr.Save(sess); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(fakeBDDir, "bd"), "close", "bd-2", "--reason", "done by hand")
	cmd.Env = append(os.Environ(), "FAKEBD_DB="+p.db)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bd close: %v\n%s", err, out)
	}
	lock.Release()
	_ = os.WriteFile(gate, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatalf("resume: %v\n%s", err, errb.String())
	}
	for _, b := range p.sessionByID(bl.ID).Backlog.Beads {
		if b.Status != "completed" {
			t.Errorf("bead %s: %s (%s)\n%s", b.ID, b.Status, b.Reason, errb.String())
		}
	}
}

// run --bead on an epic's last open child closes the epic too (bd finds it
// eligible, and closes nothing by itself).
func TestBeadRunOnTheLastChildClosesTheEpic(t *testing.T) {
	t.Parallel()
	child := func(status string) map[string]any {
		return map[string]any{"status": status, "dependencies": []any{blockedBy("bd-5", "open", "parent-child")}}
	}
	p := newBeadProject(t,
		bead("bd-5", "The epic", map[string]any{"issue_type": "epic"}),
		bead("bd-5.1", "Done child", child("closed")),
		bead("bd-5.2", "Last child", child("open")),
	)
	p.write(".vibeteam/grimoires/one.yaml", oneStepGrimoire)
	r := p.bdExec("run", "one", "--bead", "bd-5.2")
	wantCode(t, r, 0)
	if b := p.dbBead("bd-5"); b["status"] != "closed" || !strings.Contains(b["close_reason"].(string), "All children completed") {
		t.Errorf("the epic after its last child's run: %v\n%s", b, r.stderr)
	}
}
