package cli

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// notifications reads what a notifier appended to a file, one JSON object
// a line.
func notifications(t *testing.T, p *project, rel string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, l := range strings.Split(strings.TrimSpace(p.read(rel)), "\n") {
		var m map[string]string
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %q: %v", rel, l, err)
		}
		out = append(out, m)
	}
	return out
}

// The notifier reads one JSON object when a run completes, blocks or
// fails, from --notify or else from config.yaml's notify:.
func TestNotifyPayloads(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("ok.yaml", "name: ok\nsteps:\n  - name: a\n    type: script\n    command: 'true'\n")
	p.write("stuck.yaml", "name: stuck\nsteps:\n  - name: check\n    type: script\n    command: 'echo no; exit 1'\n")
	p.write("wf.yaml", "id: broken\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: shell, executionMode: headless, prompt: 'exit 4' }\n")

	wantCode(t, p.exec("run", "ok.yaml", "--notify", "cat >> flag.jsonl"), 0)
	p.write(".vibeteam/config.yaml", "notify: cat >> config.jsonl\n")
	wantCode(t, p.exec("run", "stuck.yaml"), 3)
	wantCode(t, p.exec("run", "wf.yaml"), 1)

	byWorkflow := map[string]string{}
	for _, s := range p.sessions() {
		byWorkflow[s.Workflow] = s.ID
	}
	got := append(notifications(t, p, "flag.jsonl"), notifications(t, p, "config.jsonl")...)
	want := []map[string]string{
		{"event": "completed", "session": byWorkflow["ok"], "bead": "", "grimoire": "ok", "status": "completed", "reason": "", "next": "vibeteam show " + byWorkflow["ok"]},
		{"event": "blocked", "session": byWorkflow["stuck"], "bead": "", "grimoire": "stuck", "status": "blocked", "reason": "step_failed", "next": "vibeteam resume " + byWorkflow["stuck"]},
		{"event": "failed", "session": byWorkflow["broken"], "bead": "", "grimoire": "broken", "status": "failed", "next": "vibeteam resume " + byWorkflow["broken"]},
	}
	if len(got) != len(want) {
		t.Fatalf("%d notifications, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("notification %d: %s = %q, want %q (%v)", i, k, got[i][k], v, got[i])
			}
		}
	}
	if !strings.Contains(got[1]["message"], `blocked`) || !strings.Contains(got[2]["reason"], "exit code 4") {
		t.Errorf("reasons in words: %q, %q", got[1]["message"], got[2]["reason"])
	}
}

// A notifier that fails, or outlasts its time limit, is a warning: the
// run's exit code is its own, and a slow notifier's processes are killed.
func TestNotifierFailingOrSlowIsAWarning(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("ok.yaml", "name: ok\nsteps:\n  - name: a\n    type: script\n    command: 'true'\n")

	r := p.exec("run", "ok.yaml", "--notify", "echo no webhook >&2; exit 7")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "warning: notify:") || !strings.Contains(r.stderr, "exit status 7") || !strings.Contains(r.stderr, "no webhook") {
		t.Errorf("failing notifier:\n%s", r.stderr)
	}

	start := time.Now()
	r = p.exec("run", "ok.yaml", "--notify-timeout", "300ms", "--notify", "sleep 60 & echo $! > slow.pid; wait")
	took := time.Since(start)
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "did not finish within 300ms") {
		t.Errorf("slow notifier:\n%s", r.stderr)
	}
	if took > 8*time.Second {
		t.Errorf("the run waited %s for a notifier bounded at 300ms", took)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(p.read("slow.pid")))
	if err != nil {
		t.Fatal(err)
	}
	// Killed with its group; reaped by init, it may linger an instant.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow notifier's child %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// zombie reports whether pid has exited and waits for its parent.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// What the notifier is told of each status that needs a person, and the
// command it is given to go on.
func TestSessionNotificationNext(t *testing.T) {
	t.Parallel()
	base := func(st state.Status) *state.Session {
		return &state.Session{ID: "3f2c9a1e", Workflow: "implement-bead", Status: st, Bead: map[string]any{"id": "bd-7"},
			WorkflowDefinition: &workflow.Definition{Source: ".vibeteam/grimoires/implement-bead.yaml"}}
	}
	denied := base(state.StatusWaiting)
	denied.Runs = map[string]*state.StepRun{"0": {Name: "impl", Type: "agent", Status: "waiting", Task: &state.TaskRecord{
		Status: state.TaskWaitingForUser, Reason: "permission_denied", Agent: &agentstream.Summary{Denials: []agentstream.Denial{{Tool: "Bash(npm test:*)"}}}}}}
	runBudget := base(state.StatusBlocked)
	runBudget.BlockedReason, runBudget.Error = "budget", `step "impl" (0) blocked: budget spent: cost $1.02 of $1.00 (the run's budget, --max-cost/--max-tokens); the agent was stopped`
	grimoireBudget := base(state.StatusBlocked)
	grimoireBudget.BlockedReason, grimoireBudget.Error = "budget", `step "impl" (0) blocked: budget spent: tokens 9,000 of 8,000 (the grimoire's budget); the agent was stopped`
	for _, c := range []struct {
		sess        *state.Session
		event, next string
	}{
		{base(state.StatusPendingMerge), "review", "vibeteam resume 3f2c9a1e --approve-merge"},
		{denied, "waiting", "vibeteam resume 3f2c9a1e --allow 'Bash(npm test:*)'"},
		{base(state.Status("limited")), "limited", "vibeteam resume 3f2c9a1e"},
		{runBudget, "blocked", "vibeteam resume 3f2c9a1e --max-cost USD"},
		{grimoireBudget, "blocked", "vibeteam resume 3f2c9a1e --reload"},
	} {
		n, ok := sessionNotification(c.sess, "")
		if !ok || n.Event != c.event || n.Next != c.next || n.Bead != "bd-7" || n.Grimoire != "implement-bead" {
			t.Errorf("%s: %+v, want event %s, next %q", c.sess.Status, n, c.event, c.next)
		}
	}
	for _, st := range []state.Status{state.StatusCancelled, state.StatusRunning} {
		if _, ok := sessionNotification(base(st), ""); ok {
			t.Errorf("%s is no news, but it is told", st)
		}
	}
}
