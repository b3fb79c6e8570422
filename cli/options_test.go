package cli

import (
	"fmt"
	"strings"
	"testing"
)

// TestBadChoiceClaimsNothing: run's and resume's choices (--on-interaction,
// --wait-limits) are checked once, before anything is claimed, locked or
// started, for one bead and for a backlog alike: a bad one is exit 2
// naming the flag, bd is never asked to claim, and no session is made.
func TestBadChoiceClaimsNothing(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "Add the feature", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "false"))
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"run", "ship", "--bead", "bd-1", "--on-interaction", "maybe"}, "--on-interaction"},
		{[]string{"run", "ship", "--bead", "bd-1", "--wait-limits=soon"}, "--wait-limits"},
		{[]string{"run", "ship", "--ready", "--on-interaction", "maybe"}, "--on-interaction"},
	} {
		r := p.bdExec(tc.args...)
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, tc.flag) {
			t.Errorf("%v: the flag is not named:\n%s", tc.args, r.stderr)
		}
		for _, call := range p.bdCalls() {
			if strings.Contains(call, "--claim") || strings.HasPrefix(call, "ready") {
				t.Errorf("%v: bd was asked %q before the choices were checked", tc.args, call)
			}
		}
		if s := p.sessions(); len(s) != 0 {
			t.Errorf("%v: %d session(s) made", tc.args, len(s))
		}
	}
}
