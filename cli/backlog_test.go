package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// backlogGrimoire records, in $LOG (outside the repository), when each
// bead's work starts and ends and which beads' files its worktree holds,
// so a test can see concurrency and order.
const backlogGrimoire = `name: ship
steps:
  - name: work
    type: script
    command: |
      echo "start {{.bead.id}} $(ls *.txt 2>/dev/null | tr '\n' ' ')" >> {{.log}}
      sleep {{.pause}}
      echo {{.bead.id}} > {{.bead.id}}.txt
      echo "end {{.bead.id}}" >> {{.log}}
  - name: merge
    type: merge
    require_review: false
`

func blocks(id string) map[string]any {
	return map[string]any{"dependencies": []any{map[string]any{"id": id, "status": "open", "dependency_type": "blocks"}}}
}

func newBacklogProject(t *testing.T, beads ...map[string]any) (*beadProject, string) {
	t.Helper()
	p := newBeadProject(t, beads...)
	p.write(".vibeteam/grimoires/ship.yaml", backlogGrimoire)
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\n")
	return p, filepath.Join(t.TempDir(), "work.log")
}

// workLog is the grimoire's log: one "start ID files..." or "end ID" line
// each.
func workLog(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l != "" {
			lines = append(lines, strings.Fields(l))
		}
	}
	return lines
}

// maxConcurrent is the most beads whose work overlapped.
func maxConcurrent(lines [][]string) int {
	n, most := 0, 0
	for _, l := range lines {
		switch l[0] {
		case "start":
			n++
		case "end":
			n--
		}
		most = max(most, n)
	}
	return most
}

// mergesOf counts the merge commits on main of each bead.
func (p *beadProject) mergesOf() map[string]int {
	counts := map[string]int{}
	for _, l := range strings.Split(p.git("log", "main", "--merges", "--format=%b"), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "Bead "); ok {
			id, _, _ := strings.Cut(rest, ",")
			counts[id]++
		}
	}
	return counts
}

func (p *beadProject) backlogSession() *state.Session {
	p.t.Helper()
	for _, s := range p.sessions() {
		if s.Backlog != nil {
			return s
		}
	}
	p.t.Fatal("no backlog session")
	return nil
}

// overlapGrimoire is backlogGrimoire whose work waits (up to 20 s) until
// a second bead has started, then a little more: beads run in parallel
// overlap whatever the machine's load, and beads run one at a time do not
// (each waits out its 20 s alone).
var overlapGrimoire = strings.Replace(backlogGrimoire, "sleep {{.pause}}",
	`log={{.log}}; i=0; while [ "$(grep -c '^start' "$log")" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; sleep {{.pause}}`, 1)

func TestReadyRunsTheBacklogInParallelAndPicksUpUnblockedBeads(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t,
		bead("bd-1", "One", nil), bead("bd-2", "Two", nil), bead("bd-3", "Three", nil),
		bead("bd-4", "Four", nil), bead("bd-5", "Five", nil),
		bead("bd-6", "After one", blocks("bd-1")),
	)
	p.write(".vibeteam/grimoires/ship.yaml", overlapGrimoire)
	r := p.bdExec("run", "--ready", "--jobs", "3", "--headless", "--set", "log="+logPath, "--set", "pause=0.4")
	wantCode(t, r, 0)
	lines := workLog(t, logPath)
	if n := maxConcurrent(lines); n > 3 || n < 2 {
		t.Errorf("%d beads worked at once, want 2 or 3 (--jobs 3):\n%v", n, lines)
	}
	merges := p.mergesOf()
	for _, id := range []string{"bd-1", "bd-2", "bd-3", "bd-4", "bd-5", "bd-6"} {
		if merges[id] != 1 {
			t.Errorf("%s landed %d times on main, want once (%v)\n%s", id, merges[id], merges, r.stderr)
		}
	}
	// The dependant started after its blocker landed: its worktree, made
	// from main, had the blocker's file.
	for _, l := range lines {
		if l[0] == "start" && l[1] == "bd-6" && !slices.Contains(l[2:], "bd-1.txt") {
			t.Errorf("bd-6 started before bd-1 landed: %v", l)
		}
	}
	bl := p.backlogSession()
	if bl.Status != state.StatusCompleted || len(bl.Backlog.Beads) != 6 {
		t.Fatalf("backlog session: %s, %d beads", bl.Status, len(bl.Backlog.Beads))
	}
	for _, b := range bl.Backlog.Beads {
		if b.Status != string(state.StatusCompleted) || b.Grimoire != "ship" || b.Session == "" {
			t.Errorf("bead %+v", b)
		}
	}
	out := p.bdExec("show", bl.ID)
	wantCode(t, out, 0)
	for _, want := range []string{"bd-6", "After one", "completed", "6 bead(s)"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, out.stdout)
		}
	}
	if !strings.Contains(r.stderr, "grimoire ship (") {
		t.Errorf("the run does not say which grimoire each bead got:\n%s", r.stderr)
	}
}

func TestTwoReadyRunsOnDisjointLabels(t *testing.T) {
	t.Parallel()
	var list []map[string]any
	for _, id := range []string{"a-1", "a-2", "a-3", "b-1", "b-2", "b-3"} {
		list = append(list, bead(id, "bead "+id, map[string]any{"labels": []any{"team-" + id[:1]}}))
	}
	p, logPath := newBacklogProject(t, list...)
	env := []string{"PATH=" + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log}
	start := func(label string) (*bytes.Buffer, func() int) {
		cmd := p.command("run", "--ready", "--label", "team-"+label, "--jobs", "2", "--headless", "--set", "log="+logPath, "--set", "pause=0.2")
		cmd.Env = append(cmd.Env, env...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return &errb, func() int {
			_ = cmd.Wait()
			return cmd.ProcessState.ExitCode()
		}
	}
	errA, waitA := start("a")
	errB, waitB := start("b")
	if code := waitA(); code != 0 {
		t.Errorf("run a: exit %d\n%s", code, errA)
	}
	if code := waitB(); code != 0 {
		t.Errorf("run b: exit %d\n%s", code, errB)
	}
	merges := p.mergesOf()
	for _, b := range list {
		if id := b["id"].(string); merges[id] != 1 {
			t.Errorf("%s landed %d times", id, merges[id])
		}
	}
	for _, s := range p.sessions() {
		if s.Backlog == nil {
			continue
		}
		label := s.Backlog.Labels[0]
		for _, b := range s.Backlog.Beads {
			if "team-"+b.ID[:1] != label {
				t.Errorf("the run on %s took %s", label, b.ID)
			}
		}
	}
}

func TestReadyKilledThenResumed(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t,
		bead("bd-1", "One", nil), bead("bd-2", "Two", nil), bead("bd-3", "Three", nil),
		bead("bd-4", "After one", blocks("bd-1")),
	)
	env := []string{"PATH=" + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log}
	cmd := p.command("run", "--ready", "--jobs", "2", "--headless", "--set", "log="+logPath, "--set", "pause=1")
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed, with every process of its group, while two beads work.
	waitFor(t, func() bool { return maxConcurrent(workLog(t, logPath)) >= 2 })
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()

	bl := p.backlogSession()
	if bl.Status != state.StatusRunning || len(bl.Backlog.Beads) < 2 {
		t.Fatalf("after the kill: %s, %d beads\n%s", bl.Status, len(bl.Backlog.Beads), errb.String())
	}
	resume := p.command("resume", bl.ID, "--headless")
	resume.Env = append(resume.Env, env...)
	r := runResult(t, resume)
	wantCode(t, r, 0)
	merges := p.mergesOf()
	for _, id := range []string{"bd-1", "bd-2", "bd-3", "bd-4"} {
		if merges[id] != 1 {
			t.Errorf("%s landed %d times, want once (%v)\n%s", id, merges[id], merges, r.stderr)
		}
	}
	bl = p.sessionByID(bl.ID)
	if bl.Status != state.StatusCompleted || len(bl.Backlog.Beads) != 4 {
		t.Errorf("after resume: %s, %d beads\n%s", bl.Status, len(bl.Backlog.Beads), r.stderr)
	}
	if out := p.git("worktree", "list"); strings.Count(out, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", out)
	}
}

func TestReadyInterruptedStopsEveryBead(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t, bead("bd-1", "One", nil), bead("bd-2", "Two", nil))
	env := []string{"PATH=" + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log}
	cmd := p.command("run", "--ready", "--headless", "--set", "log="+logPath, "--set", "pause=30")
	cmd.Env = append(cmd.Env, env...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return maxConcurrent(workLog(t, logPath)) >= 2 })
	began := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, errb.String())
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("stopping took %s", took)
	}
	bl := p.backlogSession()
	if bl.Status != state.StatusCancelled {
		t.Errorf("backlog %s", bl.Status)
	}
	for _, b := range bl.Backlog.Beads {
		s := p.sessionByID(b.Session)
		if s.Status != state.StatusCancelled {
			t.Errorf("bead %s session %s", b.ID, s.Status)
		}
	}
}

func TestReadyNotifiesEachBead(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t, bead("bd-1", "One", nil), bead("bd-2", "Two", nil))
	notes := filepath.Join(t.TempDir(), "notes.jsonl")
	r := p.bdExec("run", "--ready", "--headless", "--set", "log="+logPath, "--set", "pause=0", "--notify", "cat >> "+notes+"; echo >> "+notes)
	wantCode(t, r, 0)
	data, err := os.ReadFile(notes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		var n struct{ Event, Bead, Grimoire, Status string }
		if err := json.Unmarshal([]byte(l), &n); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if n.Event != "completed" || n.Grimoire != "ship" || n.Status != "completed" {
			t.Errorf("payload %+v", n)
		}
		got = append(got, n.Bead)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"bd-1", "bd-2"}) {
		t.Errorf("notified beads %v, want bd-1 and bd-2\n%s", got, data)
	}
}

// limitBacklog is a backlog whose feature beads run an agent of the
// adapter "claude" (a fake printing bead-ID.jsonl in claude's stream-json,
// continued.jsonl when its session is continued) and whose task beads
// run a script.
func limitBacklog(t *testing.T, resetIn time.Duration) (*beadProject, string) {
	t.Helper()
	p, logPath := newBacklogProject(t,
		bead("bd-1", "Limited", nil), bead("bd-2", "Same CLI", nil),
		bead("bd-3", "Other", map[string]any{"issue_type": "task", "priority": 3}),
	)
	dir := t.TempDir()
	p.write(".vibeteam/adapters/claude.yaml", fmt.Sprintf(`name: claude
command: %s
modes:
  headless:
    args: []
    output: claude-stream-json
    resume: [--resume, "{session}", cat=%s/continued.jsonl]
    prompt: { position: arg, separator: "--" }
`, fakeAgent, dir))
	limited := limitCases[0].limited(resetIn)
	for name, content := range map[string]string{"bd-1.jsonl": limited, "bd-2.jsonl": limitDone, "continued.jsonl": limitDone} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.write(".vibeteam/grimoires/agent.yaml", `name: agent
steps:
  - name: ask
    type: agent
    adapter: claude
    spell: |
      cat=`+dir+`/{{.bead.id}}.jsonl
`)
	p.write(".vibeteam/config.yaml", "grimoires:\n  by_type: { feature: agent, task: ship }\n")
	return p, logPath
}

// A usage limit holds the beads of that CLI and lets the others go on:
// without --wait-limits the limited bead stays limited (exit 3) and the
// other bead of its CLI is not taken.
func TestReadyUsageLimitHoldsThatCLIsBeads(t *testing.T) {
	t.Parallel()
	p, logPath := limitBacklog(t, 2*time.Hour)
	r := p.bdExec("run", "--ready", "--jobs", "1", "--headless", "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 3)
	bl := p.backlogSession()
	got := map[string]string{}
	for _, b := range bl.Backlog.Beads {
		got[b.ID] = b.Status
	}
	if got["bd-1"] != "limited" || got["bd-3"] != "completed" || got["bd-2"] != "" {
		t.Fatalf("beads %v: want bd-1 limited, bd-3 completed, bd-2 held back\n%s", got, r.stderr)
	}
	if show := p.bdExec("show", bl.ID).stdout; !strings.Contains(show, "claude usage limit, resets") {
		t.Errorf("show lacks the reset time:\n%s", show)
	}
}

// With --wait-limits, the limited bead is continued (its agent's own
// session) once the limit resets, and the held bead then runs.
func TestReadyWaitsOutAUsageLimit(t *testing.T) {
	t.Parallel()
	p, logPath := limitBacklog(t, 2*time.Second)
	r := p.bdExec("run", "--ready", "--jobs", "1", "--headless", "--wait-limits=1m", "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 0)
	bl := p.backlogSession()
	if len(bl.Backlog.Beads) != 3 {
		t.Fatalf("%d beads\n%s", len(bl.Backlog.Beads), r.stderr)
	}
	for _, b := range bl.Backlog.Beads {
		if b.Status != "completed" {
			t.Errorf("%s %s %s", b.ID, b.Status, b.Reason)
		}
	}
	if s := p.sessionByID(bl.Backlog.Beads[0].Session); s.Status != state.StatusCompleted {
		t.Errorf("bd-1's session %s", s.Status)
	}
}

// Bad input is said once, before any bead starts.
func TestReadyRefusesBadInput(t *testing.T) {
	t.Parallel()
	p := &beadProject{project: newProject(t), db: filepath.Join(t.TempDir(), "beads.json"), log: filepath.Join(t.TempDir(), "bd.log")}
	if err := os.WriteFile(p.db, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--ready"}, "git worktree"},
		{[]string{"run", "--ready", "--jobs", "0"}, "--jobs must be at least 1"},
		{[]string{"run", "--ready", "--bead", "bd-1"}, "--bead is for one bead"},
		{[]string{"run", "--jobs", "2", "ship"}, "--jobs goes with --ready"},
	} {
		r := p.bdExec(c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 saying %q:\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
}

// At a terminal, the agents of several beads that need a person are asked
// one at a time, on the one terminal, each answer reaching its own bead's
// agent.
func TestReadyAsksOneBeadAtATime(t *testing.T) {
	t.Parallel()
	p, _ := newBacklogProject(t, bead("bd-1", "One", nil), bead("bd-2", "Two", nil))
	p.write(".vibeteam/grimoires/ship.yaml", `name: ship
steps:
  - name: talk
    type: agent
    adapter: tui
    executionMode: interactive
    spell: |
      please ask {{.bead.id}}
`)
	env := []string{"PATH=" + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log}
	c, cmd, screen := terminalSessionEnv(t, p.project, env, "run", "--ready", "--jobs", "2")
	expectAll(t, c, screen, "needs you", "reply › ")
	_, _ = c.SendLine("y")
	expectString(t, c, "reply › ", screen)
	_, _ = c.SendLine("n")
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
	bl := p.backlogSession()
	var answers []string
	for _, b := range bl.Backlog.Beads {
		s := p.sessionByID(b.Session)
		if b.Status != "completed" {
			t.Errorf("%s: %s %s", b.ID, b.Status, b.Reason)
		}
		rec, err := os.ReadFile(filepath.Join(s.Worktree, "rec.txt"))
		if err != nil {
			// The worktree is gone once the bead completed: the record
			// is on its branch.
			rec = []byte(p.git("show", s.Branch+":rec.txt"))
		}
		if !strings.Contains(string(rec), "please ask "+b.ID+"\n") || !strings.Contains(string(rec), "answer:") {
			t.Errorf("%s's agent got %q", b.ID, rec)
		}
		_, answer, _ := strings.Cut(string(rec), "answer:")
		answers = append(answers, answer)
	}
	if len(answers) != 2 || answers[0] == answers[1] {
		t.Errorf("answers %q", answers)
	}
}

// --max-tokens bounds the whole backlog: the bead whose agent spends past
// it is stopped and blocks with reason budget, and no bead is taken after.
func TestReadyBudgetBoundsTheWholeBacklog(t *testing.T) {
	t.Parallel()
	p, _ := newBacklogProject(t, bead("bd-1", "One", nil), bead("bd-2", "Two", nil), bead("bd-3", "Three", nil))
	dir := t.TempDir()
	p.write(".vibeteam/adapters/structured.yaml", fmt.Sprintf("name: structured\ncommand: %s\nmodes:\n  headless:\n    args: []\n    output: claude-stream-json\n    prompt: { position: arg }\n", fakeAgent))
	// Two API calls of 200 tokens each, a pause, then a successful result
	// (with the run's total usage, as claude gives it).
	calls := claudeCalls(1, 2)
	result := `{"type":"result","subtype":"success","is_error":false,"result":"done\n` + "```json\\n{\\\"success\\\": true}\\n```" + `","session_id":"spend-1","usage":{"input_tokens":200,"output_tokens":200}}` + "\n"
	for name, content := range map[string]string{"calls.jsonl": calls, "result.jsonl": result} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.write(".vibeteam/grimoires/ship.yaml", "name: ship\nsteps:\n  - name: work\n    type: agent\n    adapter: structured\n    spell: |\n      cat="+dir+"/calls.jsonl sleep=1500ms cat="+dir+"/result.jsonl\n")
	r := p.bdExec("run", "--ready", "--jobs", "1", "--headless", "--max-tokens", "600")
	wantCode(t, r, 3)
	bl := p.backlogSession()
	if len(bl.Backlog.Beads) != 2 {
		t.Fatalf("%d beads taken, want 2 (the budget is spent by the second)\n%s", len(bl.Backlog.Beads), r.stderr)
	}
	first, second := bl.Backlog.Beads[0], bl.Backlog.Beads[1]
	if first.Status != "completed" || second.Status != "blocked" || second.Reason != "budget" {
		t.Errorf("beads: %s %s, %s %s (want completed, then blocked by the budget)\n%s", first.Status, first.Reason, second.Status, second.Reason, r.stderr)
	}
	if s := p.sessionByID(second.Session); !strings.Contains(s.Error, "tokens 600 of 600") {
		t.Errorf("the blocked bead's session does not say what was spent: %q", s.Error)
	}
	if show := p.bdExec("show", bl.ID).stdout; !strings.Contains(show, "of 600 tokens") {
		t.Errorf("show lacks the spend against the budget:\n%s", show)
	}
}

// A bead that cannot run (its label names a grimoire that is not there)
// fails alone: the others run, and the exit says one failed.
func TestReadyOneBeadFailsTheOthersRun(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t,
		bead("bd-1", "Fine", nil),
		bead("bd-2", "Bad label", map[string]any{"labels": []any{"grimoire:nowhere"}}),
		bead("bd-3", "Also fine", nil),
	)
	r := p.bdExec("run", "--ready", "--headless", "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "1 of 3 bead(s) failed") || !strings.Contains(r.stderr, "nowhere") {
		t.Errorf("the run does not say which bead failed and why:\n%s", r.stderr)
	}
	merges := p.mergesOf()
	if merges["bd-1"] != 1 || merges["bd-3"] != 1 || merges["bd-2"] != 0 {
		t.Errorf("merges %v", merges)
	}
	if s := p.backlogSession(); s.Status != state.StatusFailed {
		t.Errorf("backlog %s", s.Status)
	}
}

// Resuming a backlog whose beads wait for a review: without a terminal
// they are left waiting; at a terminal each is asked again, one at a time.
func TestReadyResumeAsksTheWaitingBeadsAgain(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t, bead("bd-1", "One", nil), bead("bd-2", "Two", nil))
	p.write(".vibeteam/grimoires/ship.yaml", strings.Replace(backlogGrimoire, "require_review: false", "require_review: true", 1))
	r := p.bdExec("run", "--ready", "--headless", "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 3)
	bl := p.backlogSession()
	r = p.bdExec("resume", bl.ID, "--headless")
	wantCode(t, r, 3)
	if n := len(p.mergesOf()); n != 0 {
		t.Fatalf("%d beads merged without a review", n)
	}
	env := []string{"PATH=" + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log}
	c, cmd, screen := terminalSessionEnv(t, p.project, env, "resume", bl.ID)
	for range 2 {
		expectAll(t, c, screen, "review: merge vibeteam/bd-", "review › ")
		_, _ = c.SendLine("a")
	}
	if code := waitExit(t, cmd, screen); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen.String())
	}
	if m := p.mergesOf(); m["bd-1"] != 1 || m["bd-2"] != 1 {
		t.Errorf("merges %v", m)
	}
	if s := p.sessionByID(bl.ID); s.Status != state.StatusCompleted {
		t.Errorf("backlog %s", s.Status)
	}
}

// Cancelling a parked backlog says which of its beads keep a session
// waiting, and how to cancel each.
func TestCancelBacklogNamesItsWaitingBeads(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t, bead("bd-1", "One", nil))
	p.write(".vibeteam/grimoires/ship.yaml", strings.Replace(backlogGrimoire, "require_review: false", "require_review: true", 1))
	wantCode(t, p.bdExec("run", "--ready", "--headless", "--set", "log="+logPath, "--set", "pause=0"), 3)
	bl := p.backlogSession()
	r := p.bdExec("cancel", bl.ID)
	wantCode(t, r, 0)
	bead := bl.Backlog.Beads[0]
	if !strings.Contains(r.stderr, "bead bd-1 keeps its session "+bead.Session+" (pending_merge): vibeteam cancel "+bead.Session) {
		t.Errorf("cancel does not name the waiting bead:\n%s", r.stderr)
	}
	if s := p.sessionByID(bl.ID); s.Status != state.StatusCancelled {
		t.Errorf("backlog %s", s.Status)
	}
}

// A red gate blocks only its bead: the others land, the run exits 3 and
// says what failed and what to type.
func TestReadyRedGateBlocksOnlyItsBead(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t, bead("bd-1", "One", nil), bead("bd-2", "Breaks", nil), bead("bd-3", "Three", nil))
	p.write(".vibeteam/grimoires/ship.yaml", strings.Replace(backlogGrimoire, "require_review: false", "require_review: false\n    gate: true", 1))
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\nmerge:\n  gate: \"! test -f bd-2.txt || { echo 'FAIL: bd-2 breaks the build'; exit 1; }\"\n")
	r := p.bdExec("run", "--ready", "--jobs", "3", "--headless", "--set", "log="+logPath, "--set", "pause=0")
	wantCode(t, r, 3)
	if m := p.mergesOf(); m["bd-1"] != 1 || m["bd-3"] != 1 || m["bd-2"] != 0 {
		t.Errorf("merges %v", m)
	}
	if p.git("ls-tree", "main", "bd-2.txt") != "" {
		t.Error("main has the red bead's work")
	}
	var blocked *state.BacklogBead
	for _, b := range p.backlogSession().Backlog.Beads {
		if b.ID == "bd-2" {
			blocked = b
		}
	}
	if blocked == nil || blocked.Status != "blocked" || blocked.Reason != "merge_gate_red: FAIL: bd-2 breaks the build" ||
		!strings.Contains(blocked.Next, "vibeteam resume "+blocked.Session+" --approve-merge") {
		t.Fatalf("bd-2: %+v\n%s", blocked, r.stderr)
	}
	if !strings.Contains(r.stderr, "next: fix the work in the worktree, then vibeteam resume "+blocked.Session+" --approve-merge") {
		t.Errorf("the run does not say what to type:\n%s", r.stderr)
	}
}

// One bead's step that ends does not stop another bead's task's daemon
// while that task runs; the daemon is stopped once its own run is over.
func TestReadyLeavesAnotherBeadsDaemonAlone(t *testing.T) {
	t.Parallel()
	p, logPath := newBacklogProject(t, bead("bd-1", "Daemon", nil), bead("bd-2", "Quick", nil))
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	p.write(".vibeteam/grimoires/ship.yaml", `name: ship
steps:
  - name: work
    type: script
    command: |
      if [ {{.bead.id}} = bd-1 ]; then
        (env -i /usr/bin/setsid /bin/sh -c 'echo $$ > `+pidFile+`; exec sleep 313' > /dev/null 2>&1 &)
        while [ ! -s `+pidFile+` ]; do sleep 0.01; done
        sleep 1.5
        if kill -0 $(cat `+pidFile+`) 2>/dev/null; then echo alive >> {{.log}}; else echo gone >> {{.log}}; fi
      fi
      echo {{.bead.id}} > {{.bead.id}}.txt
  - name: merge
    type: merge
    require_review: false
`)
	r := p.bdExec("run", "--ready", "--jobs", "2", "--headless", "--set", "log="+logPath)
	wantCode(t, r, 0)
	if got := strings.TrimSpace(string(must(os.ReadFile(logPath)))); got != "alive" {
		t.Errorf("bd-1's daemon was %q while bd-1's task ran (bd-2's end stopped it)", got)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(pidFile)))))
	if pid > 0 && syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the daemon %d outlived the backlog", pid)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
