package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// emptyMergeYAML is a grimoire whose work step fails and changes nothing,
// then merges: there is no commit to bring.
const emptyMergeYAML = `name: empty
steps:
  - name: work
    type: script
    command: echo tried and failed; exit 1
    on_fail: continue
  - name: merge
    type: merge
    require_review: %s%s
`

// TestEmptyMergeClosesNothing: a merge with no commit to bring says
// "nothing to merge", merges nothing, blocks the grimoire with
// nothing_to_merge (exit 3) and leaves the bead open (not closed), with or
// without a review asked for. allow_empty: true makes it a success.
func TestEmptyMergeClosesNothing(t *testing.T) {
	t.Parallel()
	for _, review := range []string{"false", "true"} {
		p := newBeadProject(t, bead("bd-7", "Nothing happens", nil))
		p.write(".vibeteam/grimoires/empty.yaml", fmt.Sprintf(emptyMergeYAML, review, ""))
		p.git("add", "-A")
		p.git("commit", "-q", "-m", "grimoire")
		before := p.git("rev-parse", "main")
		r := p.bdExec("run", "empty", "--bead", "bd-7", "--auto-approve")
		label := "require_review: " + review
		wantCode(t, r, 3)
		if strings.Contains(r.stderr, "merged vibeteam/bd-7") || !strings.Contains(r.stderr, "nothing to merge") {
			t.Errorf("%s: stderr claims a merge, or does not say nothing to merge:\n%s", label, r.stderr)
		}
		if after := p.git("rev-parse", "main"); after != before {
			t.Errorf("%s: main moved %s -> %s", label, before, after)
		}
		s := p.only()
		if s.Status != state.StatusBlocked || s.BlockedReason != "nothing_to_merge" || s.Merged != "" {
			t.Errorf("%s: status %s reason %q merged %q", label, s.Status, s.BlockedReason, s.Merged)
		}
		calls := p.bdCalls()
		if slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "close") }) {
			t.Errorf("%s: the bead was closed: %q", label, calls)
		}
	}

	p := newBeadProject(t, bead("bd-8", "Nothing is fine", nil))
	p.write(".vibeteam/grimoires/empty.yaml", fmt.Sprintf(emptyMergeYAML, "false", "\n    allow_empty: true"))
	r := p.bdExec("run", "empty", "--bead", "bd-8")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "nothing to merge") || strings.Contains(r.stderr, "merged vibeteam/bd-8") {
		t.Errorf("allow_empty: stderr does not say nothing to merge:\n%s", r.stderr)
	}
	if s := p.only(); s.Status != state.StatusCompleted || s.Merged != "" {
		t.Errorf("allow_empty: status %s merged %q", s.Status, s.Merged)
	}
}
