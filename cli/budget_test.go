package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// claudeCalls is a claude stream-json run's init line and n API calls, each
// reporting 100 input and 100 output tokens (twice: a call's usage is on
// each of its content blocks' lines), from call number first on.
func claudeCalls(first, n int) string {
	var b strings.Builder
	if first == 1 {
		b.WriteString(`{"type":"system","subtype":"init","session_id":"spend-1"}` + "\n")
	}
	for i := first; i < first+n; i++ {
		for range 2 {
			fmt.Fprintf(&b, `{"type":"assistant","message":{"id":"msg_%d","content":[{"type":"text","text":"working %d"}],"usage":{"input_tokens":100,"output_tokens":100}},"session_id":"spend-1"}`+"\n", i, i)
		}
	}
	return b.String()
}

// A grimoire's token budget stops its agent while it runs: the step
// blocks with reason budget, naming what was spent, and nothing after it
// runs.
func TestBudgetStopsTheAgentWhileItRuns(t *testing.T) {
	t.Parallel()
	p := structuredProject(t, "claude-stream-json")
	p.write("five.jsonl", claudeCalls(1, 5))
	p.write("more.jsonl", claudeCalls(6, 5))
	// Five calls, then a long think: only the budget ends it early (the
	// step's timeout fails the test's expectations instead of hanging it).
	p.write("g.yaml", `name: spender
budget: { tokens: 1000 }
steps:
  - name: impl
    type: agent
    adapter: structured
    timeout: 60s
    spell: |
      cat=five.jsonl sleep=60s cat=more.jsonl
  - name: after
    type: script
    command: touch after.txt
`)
	start := time.Now()
	r := p.exec("run", "g.yaml")
	took := time.Since(start)
	wantCode(t, r, 3)
	if took > 30*time.Second {
		t.Errorf("the run took %s: the agent was not stopped at its budget", took)
	}
	s := p.only()
	if s.Status != state.StatusBlocked || s.BlockedReason != "budget" || s.BlockedStep != "impl" {
		t.Fatalf("status %s, blocked %q at %q; error %q", s.Status, s.BlockedReason, s.BlockedStep, s.Error)
	}
	const what = "tokens 1,000 of 1,000 (the grimoire's budget)"
	if !strings.Contains(s.Error, what) || !strings.Contains(r.stderr, what) || !strings.Contains(r.stderr, "blocked (budget)") {
		t.Errorf("error %q; stderr:\n%s", s.Error, r.stderr)
	}
	rec := s.Runs["0"].Task
	if rec == nil || rec.Reason != "budget" || rec.Agent == nil || rec.Agent.Tokens.Input != 500 || rec.Agent.Tokens.Output != 500 {
		t.Fatalf("task record %+v (agent %+v)", rec, rec.Agent)
	}
	if p.exists("after.txt") {
		t.Error("the step after the budget ran")
	}
	var spent []state.Event
	for _, e := range p.events(s.ID) {
		if e.Kind() == "budget.spent" {
			spent = append(spent, e)
		}
	}
	if len(spent) != 1 || spent[0].Fields()["stopped"] != true || spent[0].Fields()["what"] != what {
		t.Errorf("budget.spent events: %+v", spent)
	}
}

// --max-cost counts what claude reports at the end of each run: the run
// that spent it keeps its work, the next agent does not start. A resume
// counts what the session spent already, and goes on under a higher limit.
func TestMaxCostStopsTheNextAgentAndResumeCountsTheSpend(t *testing.T) {
	t.Parallel()
	p := structuredProject(t, "claude-stream-json")
	p.write("costly.jsonl", `{"type":"system","subtype":"init","session_id":"c-1"}
{"type":"result","subtype":"success","is_error":false,"result":"done\n`+"```json\\n{\\\"success\\\": true}\\n```"+`","session_id":"c-1","total_cost_usd":0.6,"usage":{"input_tokens":300,"output_tokens":40}}
`)
	p.write("g.yaml", `name: costs
steps:
  - name: first
    type: agent
    adapter: structured
    spell: |
      cat=costly.jsonl
  - name: between
    type: script
    command: echo between >> between.txt
  - name: second
    type: agent
    adapter: structured
    spell: |
      cat=costly.jsonl write=second.txt:ran
`)
	r := p.exec("run", "g.yaml", "--max-cost", "0.5")
	wantCode(t, r, 3)
	s := p.only()
	const what = "cost $0.60 of $0.50 (the run's budget, --max-cost/--max-tokens)"
	if s.BlockedReason != "budget" || s.BlockedStep != "second" || !strings.Contains(s.Error, what) {
		t.Fatalf("blocked %q at %q: %q\n%s", s.BlockedReason, s.BlockedStep, s.Error, r.stderr)
	}
	if p.exists("second.txt") || p.read("between.txt") != "between\n" {
		t.Fatal("the second agent started, or the script between did not run")
	}
	if s.RunBudget == nil || s.RunBudget.CostUSD != 0.5 {
		t.Errorf("run budget %+v", s.RunBudget)
	}
	show := p.exec("show", s.ID)
	if !strings.Contains(show.stdout, "$0.60 of $0.50") {
		t.Errorf("show does not give the spend against the budget:\n%s", show.stdout)
	}

	// The $0.60 spent counts on resume: a limit under it blocks again,
	// one over it lets the second agent run.
	r = p.exec("resume", s.ID, "--max-cost", "0.55")
	wantCode(t, r, 3)
	if p.exists("second.txt") {
		t.Fatal("resumed under $0.55 with $0.60 spent, the second agent ran")
	}
	r = p.exec("resume", s.ID, "--max-cost", "2")
	wantCode(t, r, 0)
	if p.read("second.txt") != "ran" {
		t.Error("the second agent did not run")
	}
	if s := p.only(); s.RunBudget == nil || s.RunBudget.CostUSD != 2 {
		t.Errorf("run budget after resume %+v", s.RunBudget)
	}
}

func TestBudgetFlagsAreChecked(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	structuredWorkflow(p, "print=x")
	for _, args := range [][]string{{"--max-cost", "0"}, {"--max-cost", "-1"}, {"--max-tokens", "0"}} {
		r := p.exec(append([]string{"run", "wf.yaml"}, args...)...)
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, args[0]+" must be") {
			t.Errorf("%v: %s", args, r.stderr)
		}
	}
}

// An agent step's own cost budget stops its agent as opencode reports the
// cost of each step, before the grimoire's larger budget is reached.
func TestStepCostBudgetStopsOpencode(t *testing.T) {
	t.Parallel()
	p := structuredProject(t, "opencode-json")
	var steps strings.Builder
	steps.WriteString(`{"type":"step_start","sessionID":"ses_1","part":{"id":"p0","type":"step-start"}}` + "\n")
	for i := range 3 {
		fmt.Fprintf(&steps, `{"type":"step_finish","sessionID":"ses_1","part":{"id":"p%d","type":"step-finish","reason":"tool-calls","cost":0.25,"tokens":{"input":10,"output":10,"reasoning":0,"cache":{"read":0,"write":0}}}}`+"\n", i+1)
	}
	p.write("steps.jsonl", steps.String())
	p.write("g.yaml", `name: steps
budget: { cost_usd: 10 }
steps:
  - name: impl
    type: agent
    adapter: structured
    timeout: 60s
    budget: { cost_usd: 0.5 }
    spell: |
      cat=steps.jsonl sleep=60s
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 3)
	s := p.only()
	const what = "cost $0.50 of $0.50 (step impl's budget)"
	if s.BlockedReason != "budget" || !strings.Contains(s.Error, what) {
		t.Fatalf("blocked %q: %q\n%s", s.BlockedReason, s.Error, r.stderr)
	}
	if show := p.exec("show", s.ID); !strings.Contains(show.stdout, "$0.75 of $10.00 (the grimoire's)") {
		t.Errorf("show:\n%s", show.stdout)
	}
}
