package workflow

import (
	"strings"
	"testing"
)

// allow_empty on a merge step is read as a boolean, false unless written;
// anything else is an error at its line.
func TestMergeAllowEmpty(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]bool{
		"  - {name: m, type: merge}\n":                    false,
		"  - {name: m, type: merge, allow_empty: true}\n": true,
	} {
		def, probs := Diagnose([]byte(ghead+src), "g.yaml", defaultOpts())
		if def == nil || len(probs) != 0 {
			t.Fatalf("%q: %v, %v", src, def, probs)
		}
		if got := def.Steps[0].Merge.AllowEmpty; got != want {
			t.Errorf("%q: AllowEmpty = %v, want %v", src, got, want)
		}
	}
	_, probs := Diagnose([]byte(ghead+"  - {name: m, type: merge, allow_empty: maybe}\n"), "g.yaml", defaultOpts())
	if len(probs) != 1 || !strings.Contains(probs[0].Error(), "g.yaml:3:41: steps[0].allow_empty: must be true or false") {
		t.Errorf("problems %v", probs)
	}
}
