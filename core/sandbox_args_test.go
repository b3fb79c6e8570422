package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/taskrun"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Codex reads its base URL from no variable: in the sandbox its command
// line gets -c openai_base_url at the proxy's model route, before its own
// arguments, or it would call api.openai.com holding only the placeholder
// key. A script step gets nothing added.
func TestSandboxedCodexGetsItsBaseURLOnItsCommandLine(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-real-key-0123456789")
	def, err := workflow.Parse([]byte("id: w\nstages:\n  - id: s\n    tasks:\n      - id: a\n        adapter: codex\n        executionMode: headless\n        prompt: hi\n"), "w.yaml", workflow.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sess := &state.Session{ID: "s1", BaseDir: t.TempDir(), WorkflowDefinition: def}
	e, stop, err := startEgress(sess, sandbox.Config{}, func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	policy := &sandbox.Policy{Bwrap: "bwrap", BaseDir: sess.BaseDir, WorkDir: sess.BaseDir, Home: t.TempDir(), StateDir: t.TempDir(), Egress: e}
	spec := runner.Spec{Command: "codex", Args: []string{"exec", "--json", "--", "hi"}, Dir: sess.BaseDir}
	if err := taskrun.Sandboxed(policy, "codex", &spec, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(spec.Args) < 2 || spec.Args[0] != "-c" || !strings.HasPrefix(spec.Args[1], `openai_base_url="http://127.0.0.1:`) || !slices.Equal(spec.Args[2:], []string{"exec", "--json", "--", "hi"}) {
		t.Errorf("codex's argv in the sandbox: %q", spec.Args)
	}
	if spec.Sandbox.Set["OPENAI_API_KEY"] == "sk-real-key-0123456789" || spec.Sandbox.Set["OPENAI_API_KEY"] == "" {
		t.Errorf("the key inside: %q, want the placeholder", spec.Sandbox.Set["OPENAI_API_KEY"])
	}
	script := runner.Spec{Command: "sh", Args: []string{"-c", "true"}, Dir: sess.BaseDir}
	if err := taskrun.Sandboxed(policy, "", &script, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(script.Args, []string{"-c", "true"}) {
		t.Errorf("a script's argv: %q", script.Args)
	}
}
