package adapters

import (
	"slices"
	"strings"
	"testing"
)

// With --auto-approve inside vibeteam's sandbox, claude and codex run in
// their own bypass modes; outside it, the narrower pre-allowed tools.
func TestAutoApproveInsideTheSandboxIsTheCLIsBypassMode(t *testing.T) {
	r := NewRegistry()
	for _, c := range []struct {
		adapter, inside, outside string
		env                      map[string]string
	}{
		{"claude", "--dangerously-skip-permissions", "--allowedTools=", map[string]string{"IS_SANDBOX": "1"}},
		{"codex", "danger-full-access", "workspace-write", nil},
	} {
		for _, sandboxed := range []bool{true, false} {
			a, err := r.New(c.adapter, Options{AutoApprove: true, Sandboxed: sandboxed})
			if err != nil {
				t.Fatal(err)
			}
			lc, err := a.LaunchConfig(Headless, "do it", nil)
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Join(lc.Args, " ")
			want, not := c.inside, c.outside
			if !sandboxed {
				want, not = c.outside, c.inside
			}
			if !strings.Contains(args, want) || strings.Contains(args, not) {
				t.Errorf("%s sandboxed=%v: argv %q, want %q and not %q", c.adapter, sandboxed, lc.Args, want, not)
			}
			for k, v := range c.env {
				if got, ok := lc.Env[k]; ok != sandboxed || sandboxed && got != v {
					t.Errorf("%s sandboxed=%v: env %s=%q (set %v)", c.adapter, sandboxed, k, got, ok)
				}
			}
		}
	}
	// Without --auto-approve the sandbox adds nothing.
	a, _ := r.New("claude", Options{Sandboxed: true})
	lc, _ := a.LaunchConfig(Headless, "do it", nil)
	if slices.Contains(lc.Args, "--dangerously-skip-permissions") || lc.Env["IS_SANDBOX"] != "" {
		t.Errorf("without --auto-approve: %q %v", lc.Args, lc.Env)
	}
}
