package workflow

import (
	"strings"
	"testing"
)

// A merge step's on_conflict: resolve, or the long form naming the agent
// and its spell; anything else is refused at its line.
func TestMergeOnConflict(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, step string
		want       *OnConflict
		err        string
	}{
		{name: "not written", step: "require_review: false"},
		{name: "resolve", step: "on_conflict: resolve", want: &OnConflict{Resolve: true}},
		{name: "long form", step: "on_conflict: {resolve: {adapter: codex, spell: fix}}", want: &OnConflict{Resolve: true, Adapter: "codex", Spell: "fix"}},
		{name: "long form, defaults", step: "on_conflict: {resolve: }", want: &OnConflict{Resolve: true}},
		{name: "another word", step: "on_conflict: guess", err: `g.yaml:5:18: steps[0].on_conflict: must be "resolve", got "guess"`},
		{name: "a list", step: "on_conflict: [resolve]", err: `g.yaml:5:18: steps[0].on_conflict: must be resolve, or {resolve: {adapter: NAME, spell: NAME}}`},
		{name: "an unknown key", step: "on_conflict: {resolv: {}}", err: `g.yaml:5:19: steps[0].on_conflict: unknown key "resolv" (did you mean "resolve"?)`},
		{name: "an unknown key inside", step: "on_conflict: {resolve: {agent: fake}}", err: `g.yaml:5:29: steps[0].on_conflict.resolve: unknown key "agent"`},
		{name: "an unknown adapter", step: "on_conflict: {resolve: {adapter: nope}}", err: `steps[0].on_conflict.resolve.adapter: unknown adapter "nope"`},
		{name: "a bad spell name", step: "on_conflict: {resolve: {spell: ../x}}", err: `steps[0].on_conflict.resolve.spell: invalid spell name "../x"`},
		{name: "not a merge step's", step: "require_review: false\n  - name: a\n    type: script\n    command: x\n    on_conflict: resolve", err: `unknown key "on_conflict" for a script step (it is a key of merge steps)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			step := "    " + strings.ReplaceAll(c.step, "\n", "\n    ")
			step = strings.ReplaceAll(step, "\n      - name", "\n  - name")
			step = strings.ReplaceAll(step, "\n        ", "\n    ")
			src := "name: g\nsteps:\n  - name: merge\n    type: merge\n" + step + "\n"
			def, err := Parse([]byte(src), "g.yaml", defaultOpts())
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q\n%s", err, c.err, src)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := def.Steps[0].Merge.OnConflict
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("on_conflict = %+v, want %+v", got, c.want)
			}
		})
	}
}
