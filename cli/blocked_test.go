package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// A loop out of iterations blocks with the last failing step's output tail
// and the failures it printed, in the session, the event and show; show
// gives retry and cancel with the exact commands.
func TestLoopOutOfIterationsHasContext(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: gate
steps:
  - name: quality
    type: loop
    max_iterations: 2
    steps:
      - name: tests
        type: script
        command: 'echo "--- FAIL: TestGate (iteration {{.quality.iteration}})"; i=0; while [ $i -lt 40 ]; do echo "noise $i"; i=$((i+1)); done; echo last line; exit 1'
        on_fail: continue
      - name: fix
        type: script
        command: echo fixing
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 3)
	s := p.only()
	if s.Status != state.StatusBlocked || s.BlockedReason != "max_iterations" {
		t.Fatalf("status %s reason %s", s.Status, s.BlockedReason)
	}
	for _, want := range []string{`step "tests" (0.2/0) failed:`, "failures reported earlier:", "--- FAIL: TestGate (iteration 2)", "last line"} {
		if !strings.Contains(s.BlockedContext, want) {
			t.Errorf("blocked context lacks %q:\n%s", want, s.BlockedContext)
		}
	}
	var ctx string
	for _, e := range p.events(s.ID) {
		if e.Kind() == events.WorkflowBlocked {
			ctx, _ = e.Fields()["context"].(string)
		}
	}
	if ctx != s.BlockedContext {
		t.Errorf("event context %q", ctx)
	}
	r = p.exec("show", s.ID, "--json")
	wantCode(t, r, 0)
	var shown map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || !strings.Contains(shown["blocked_context"].(string), "--- FAIL: TestGate") {
		t.Errorf("show --json: %v\n%s", err, r.stdout)
	}
	r = p.exec("show", s.ID)
	wantCode(t, r, 0)
	for _, want := range []string{
		"retry   vibeteam resume " + s.ID + " ",
		"vibeteam resume " + s.ID + " --set KEY=VALUE",
		"cancel  vibeteam cancel " + s.ID + " ",
		"--- FAIL: TestGate (iteration 2)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r.stdout)
		}
	}
}

// A block with no step output (a template that cannot be rendered) has
// its reason as context, never an empty one.
func TestTemplateBlockHasContext(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: tpl
steps:
  - name: first
    type: script
    command: echo one
  - name: second
    type: script
    command: echo {{.first.outptu}}
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 3)
	s := p.only()
	if s.BlockedReason != "template" || !strings.Contains(s.BlockedContext, `no key "outptu" in .first (did you mean output?)`) {
		t.Errorf("reason %q context %q", s.BlockedReason, s.BlockedContext)
	}
}
