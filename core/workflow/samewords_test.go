package workflow_test

import (
	"errors"
	"testing"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// The same mistake reads the same in a stage workflow, a grimoire and an
// adapter file: one walker (internal/yamlnode) reads all three. Only the
// position and the field path differ.
func TestSameMistakeSameWordsInEveryKindOfFile(t *testing.T) {
	const stages = `id: wf
stages:
  - id: s
    tasks:
      - id: a
        adapter: claude
        nmae: x
        prompt: [x]
        env: [A]
        keepAlive: yes
`
	const grimoire = `name: g
steps:
  - nmae: x
    name: s
    type: agent
    spell: [x]
  - name: t
    type: stage
    tasks:
      - id: a
        adapter: claude
        env: [A]
  - name: m
    type: merge
    require_review: yes
`
	const adapter = `nmae: x
command: [x]
modes:
  headless: { usePTY: yes }
env: [A]
`
	files := map[string]workflow.ErrorList{}
	for file, src := range map[string]string{"wf.yaml": stages, "g.yaml": grimoire} {
		_, probs := workflow.Diagnose([]byte(src), file, workflow.LoadOptions{})
		files[file] = probs
	}
	_, err := adapters.Parse("ad.yaml", []byte(adapter))
	var list adapters.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("adapter file: want an ErrorList, got %v", err)
	}
	files["ad.yaml"] = list

	for _, m := range []struct {
		mistake string
		want    string
		field   map[string]string // by file
	}{
		{"an unknown key with a near miss", `unknown key "nmae" (did you mean "name"?)`,
			map[string]string{"wf.yaml": "stages[0].tasks[0]", "g.yaml": "steps[0]", "ad.yaml": ""}},
		{"a list for a string", "must be a string",
			map[string]string{"wf.yaml": "stages[0].tasks[0].prompt", "g.yaml": "steps[0].spell", "ad.yaml": "command"}},
		{"a list for a map", "must be a map of strings",
			map[string]string{"wf.yaml": "stages[0].tasks[0].env", "g.yaml": "steps[1].tasks[0].env", "ad.yaml": "env"}},
		{"text for a boolean", "must be true or false",
			map[string]string{"wf.yaml": "stages[0].tasks[0].keepAlive", "g.yaml": "steps[2].require_review", "ad.yaml": "modes.headless.usePTY"}},
	} {
		for file, field := range m.field {
			var found *workflow.Error
			for _, e := range files[file] {
				if e.Field == field && e.Msg == m.want {
					found = e
				}
			}
			if found == nil {
				t.Errorf("%s in %s: no %q at %q; got:\n%v", m.mistake, file, m.want, field, files[file])
				continue
			}
			if found.File != file || found.Line == 0 || found.Col == 0 {
				t.Errorf("%s in %s: not located: %v", m.mistake, file, found)
			}
		}
	}
}
