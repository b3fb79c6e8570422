package workflow

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/budget"
)

// ghead is a grimoire up to its first step, whose mapping starts at line 3,
// column 5.
const ghead = "name: g\nsteps:\n"

// stripGrimoirePos is the definition without positions, which differ
// between a file and the definition a test writes out.
func stripGrimoirePos(def *Definition) *Definition {
	d := *def
	d.Steps = stripStepPos(def.Steps)
	return &d
}

func stripStepPos(steps []Step) []Step {
	if steps == nil {
		return nil
	}
	out := make([]Step, len(steps))
	for i, s := range steps {
		s.Pos, s.Positions = Pos{}, nil
		if s.Tasks != nil {
			s.Tasks = slices.Clone(s.Tasks)
			for j := range s.Tasks {
				s.Tasks[j].Pos = Pos{}
			}
		}
		if s.Agent != nil {
			a := *s.Agent
			if a.Input != nil {
				a.Input = slices.Clone(a.Input)
				for j := range a.Input {
					a.Input[j].Pos = Pos{}
				}
			}
			s.Agent = &a
		}
		if s.Loop != nil {
			l := *s.Loop
			l.Steps = stripStepPos(l.Steps)
			s.Loop = &l
		}
		out[i] = s
	}
	return out
}

// everyKey is testdata/grimoires/every-key.yaml as loaded: defaults filled in.
func everyKey() *Definition {
	return &Definition{
		Kind: KindGrimoire, ID: "every-key", Description: "Implement, test until green, review",
		Timeout: Duration(time.Hour), Source: "testdata/grimoires/every-key.yaml",
		Budget: &budget.Limit{Tokens: 1000000, CostUSD: 5},
		Steps: []Step{
			{Type: StepAgent, Name: "implement", When: "true", Timeout: Duration(20 * time.Minute), Output: "implementation",
				Agent: &AgentStep{
					Spell:   "implement",
					Input:   []Input{{Name: "focus", Value: "{{.bead.title}}"}, {Name: "notes", Value: "keep it small"}},
					Adapter: "codex", ExecutionMode: ModeInteractive, ExtraArgs: []string{"--model", "o3"}, OnFail: OnFailBlock,
					Budget: &budget.Limit{Tokens: 200000},
				}},
			{Type: StepLoop, Name: "quality", Timeout: Duration(time.Hour), Loop: &LoopStep{
				MaxIterations: 3, OnMaxIterations: OnMaxExit,
				Steps: []Step{
					{Type: StepScript, Name: "run-tests", Timeout: Duration(10 * time.Minute), Output: "test_output",
						Script: &ScriptStep{Command: "go test ./...", OnFail: OnFailContinue}},
					{Type: StepAgent, Name: "fix", When: "{{.previous.failed}}", Timeout: DefaultAgentTimeout,
						Agent: &AgentStep{Spell: "Fix the failing tests:\n{{.test_output.output}}\n",
							Adapter: "claude", ExecutionMode: ModeHeadless, OnFail: OnFailContinue}},
					{Type: StepStage, Name: "reviewers", When: "{{.previous.success}}", Tasks: []Task{
						{ID: "lint", Adapter: "shell", ExecutionMode: ModeHeadless, Prompt: "go vet ./..."},
						{ID: "review", Adapter: "claude", ExecutionMode: ModeInteractive, Prompt: `Review {{(step "run-tests").output}}`},
					}},
					{Type: StepScript, Name: "final", Timeout: DefaultScriptTimeout,
						Script: &ScriptStep{Command: "go test ./...", OnFail: OnFailBlock, OnSuccess: OnSuccessExitLoop}},
				},
			}},
		},
	}
}

func TestParseGrimoireEveryKey(t *testing.T) {
	const file = "testdata/grimoires/every-key.yaml"
	def, err := LoadFile(file, defaultOpts())
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if got, want := stripGrimoirePos(def), everyKey(); !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("definition mismatch\n got: %s\nwant: %s", g, w)
	}
	if errs := Validate(def, defaultOpts()); errs != nil {
		t.Errorf("Validate of a parsed grimoire: %v", errs)
	}

	// Positions: every step, nested ones too, and the values of its keys.
	fix := def.FindStep("fix")
	if fix == nil {
		t.Fatal(`FindStep("fix") = nil`)
	}
	for _, c := range []struct {
		what      string
		got, want Pos
	}{
		{"implement", def.Steps[0].Pos, Pos{File: file, Line: 6, Col: 5}},
		{"implement input.focus", def.Steps[0].PosOf("input.focus"), Pos{File: file, Line: 10, Col: 14}},
		{"implement input[0]", def.Steps[0].Agent.Input[0].Pos, Pos{File: file, Line: 10, Col: 14}},
		{"implement timeout", def.Steps[0].PosOf("timeout"), Pos{File: file, Line: 17, Col: 14}},
		{"quality", def.Steps[1].Pos, Pos{File: file, Line: 20, Col: 5}},
		{"fix", fix.Pos, Pos{File: file, Line: 32, Col: 9}},
		{"fix when", fix.PosOf("when"), Pos{File: file, Line: 37, Col: 15}},
		{"fix unwritten key", fix.PosOf("adapter"), fix.Pos},
		{"review task", def.Steps[1].Loop.Steps[2].Tasks[1].Pos, Pos{File: file, Line: 46, Col: 13}},
	} {
		if c.got != c.want {
			t.Errorf("%s: Pos = %+v, want %+v", c.what, c.got, c.want)
		}
	}
}

func TestGrimoireKind(t *testing.T) {
	tests := []struct {
		name, file, src string
		kind            string // "" when the file does not load
		want            []string
	}{
		{name: "steps", src: ghead + "  - {name: a, type: script, command: x}\n", kind: KindGrimoire},
		{name: "stages", src: "id: wf\nstages:\n  - {id: s, tasks: [{id: a, adapter: claude}]}\n", kind: KindStages},
		{name: "json", file: "testdata/grimoires/minimal.json", kind: KindGrimoire},
		{name: "steps without a name", src: "steps:\n  - {name: a, type: script, command: x}\n",
			want: []string{`g.yaml:1:1: missing required key "name"`}},
		{name: "a name without steps is a grimoire", src: "name: g\n",
			want: []string{`g.yaml:1:1: missing required key "steps"`}},
		{name: "a description without steps is a grimoire", src: "description: d\n",
			want: []string{`g.yaml:1:1: missing required key "name"`, `g.yaml:1:1: missing required key "steps"`}},
		{name: "an id without stages is a stage workflow", src: "id: wf\n",
			want: []string{`g.yaml:1:1: missing required key "stages"`}},
		{name: "steps and stages", src: ghead + "  - {name: a, type: script, command: x}\nstages: []\n",
			want: []string{`g.yaml:4:1: unknown key "stages" (a file has either "steps" (a grimoire) or "stages" (a stage workflow), not both)`}},
		{name: "id in a grimoire", src: "id: g\nsteps:\n  - {name: a, type: script, command: x}\n",
			want: []string{
				`g.yaml:1:1: unknown key "id" (a grimoire and its steps are named by "name")`,
				`g.yaml:1:1: missing required key "name"`,
			}},
		{name: "goal in a grimoire", src: "goal: x\n" + ghead + "  - {name: a, type: script, command: x}\n",
			want: []string{`g.yaml:1:1: unknown key "goal" (a grimoire has no goal; its "description" says what it does)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var def *Definition
			var err error
			if tt.file != "" {
				def, err = LoadFile(tt.file, defaultOpts())
			} else {
				def, err = Parse([]byte(tt.src), "g.yaml", defaultOpts())
			}
			if got := errLines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got: %q\nwant: %q", got, tt.want)
			}
			if tt.kind != "" && (def == nil || def.Kind != tt.kind) {
				t.Errorf("definition %+v, want kind %q", def, tt.kind)
			}
		})
	}
}

func TestGrimoireDefaults(t *testing.T) {
	src := ghead + `  - {name: a, type: agent, spell: implement}
  - {name: s, type: script, command: make}
  - name: l
    type: loop
    steps:
      - {name: inner, type: script, command: make, timeout: 90}
  - name: st
    type: stage
    tasks: [{id: t, adapter: codex}]
`
	want := &Definition{Kind: KindGrimoire, ID: "g", Timeout: DefaultGrimoireTimeout, Source: "g.yaml", Steps: []Step{
		{Type: StepAgent, Name: "a", Timeout: Duration(15 * time.Minute),
			Agent: &AgentStep{Spell: "implement", Adapter: "claude", ExecutionMode: ModeHeadless, OnFail: OnFailContinue}},
		{Type: StepScript, Name: "s", Timeout: Duration(5 * time.Minute), Script: &ScriptStep{Command: "make", OnFail: OnFailBlock}},
		{Type: StepLoop, Name: "l", Loop: &LoopStep{MaxIterations: 10, OnMaxIterations: OnMaxBlock, Steps: []Step{
			{Type: StepScript, Name: "inner", Timeout: Duration(90 * time.Second), Script: &ScriptStep{Command: "make", OnFail: OnFailBlock}},
		}}},
		{Type: StepStage, Name: "st", Tasks: []Task{{ID: "t", Adapter: "codex", ExecutionMode: ModeInteractive}}},
	}}
	def, err := Parse([]byte(src), "g.yaml", defaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := stripGrimoirePos(def); !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("definition mismatch\n got: %s\nwant: %s", g, w)
	}

	// --headless makes agents headless too; an interactive one included.
	def, err = Parse([]byte(ghead+"  - {name: a, type: agent, spell: x, executionMode: interactive}\n"), "g.yaml",
		LoadOptions{Adapters: fake{}, ForceHeadless: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := def.Steps[0].Agent.ExecutionMode; m != ModeHeadless {
		t.Errorf("mode under --headless = %q", m)
	}

	// require_review is true unless written false; null is not written.
	for src, want := range map[string]bool{
		"  - {name: m, type: merge}\n":                        true,
		"  - {name: m, type: merge, require_review: }\n":      true,
		"  - {name: m, type: merge, require_review: false}\n": false,
	} {
		def, probs := Diagnose([]byte(ghead+src), "g.yaml", defaultOpts())
		if def == nil || len(probs) != 0 {
			t.Fatalf("%q: %v, %v", src, def, probs)
		}
		p := newParser("g.yaml", len(src))
		root, _ := decode([]byte(ghead+src), "g.yaml")
		if got := p.definition(root).Steps[0].Merge.RequireReview; got != want {
			t.Errorf("%q: RequireReview = %v, want %v", src, got, want)
		}
	}

	// A definition built in code gets the same defaults, and a second
	// Normalize changes nothing.
	code := &Definition{Kind: KindGrimoire, ID: "g", Steps: []Step{
		{Type: StepAgent, Name: "a"}, {Type: StepMerge, Name: "m"}, {Type: StepLoop, Name: "l"},
	}}
	Normalize(code, LoadOptions{})
	if code.Steps[0].Agent == nil || code.Steps[0].Agent.Adapter != DefaultAgentAdapter || !code.Steps[1].Merge.RequireReview ||
		code.Steps[2].Loop.MaxIterations != DefaultMaxIterations {
		t.Errorf("Normalize of a definition built in code: %+v", code.Steps)
	}
	again := stripGrimoirePos(code)
	Normalize(again, LoadOptions{})
	if !reflect.DeepEqual(again, stripGrimoirePos(code)) {
		t.Error("Normalize is not idempotent")
	}
}

func TestGrimoireErrors(t *testing.T) {
	force := LoadOptions{Adapters: fake{}, ForceHeadless: true}
	none := LoadOptions{Adapters: emptyRegistry{}}
	tests := []struct {
		name string
		src  string // after ghead
		opts *LoadOptions
		want []string
	}{
		// the top level
		{name: "unknown top key", src: "descripton: x\n",
			want: []string{`g.yaml:2:7: steps: a grimoire needs at least one step`, `g.yaml:3:1: unknown key "descripton" (did you mean "description"?)`}},
		{name: "bad workflow timeout", src: "  - {name: a, type: script, command: x}\ntimeout: soon\n",
			want: []string{`g.yaml:4:10: timeout: invalid duration "soon": write it like "90s", "10m" or "1h30m", or as a number of seconds`}},
		{name: "steps not a list", src: "  a: b\n",
			want: []string{`g.yaml:3:3: steps: must be a list of steps`}},
		{name: "a step that is not a mapping keeps the index of the next", src: "  - hello\n  - {name: b, type: bogus}\n",
			want: []string{
				`g.yaml:3:5: steps[0]: must be a mapping with "name" and "type"`,
				`g.yaml:4:21: steps[1].type: unknown step type "bogus" (known: agent, script, loop, merge, stage)`,
			}},

		// names
		{name: "missing name", src: "  - {type: script, command: x}\n",
			want: []string{`g.yaml:3:5: steps[0]: missing required key "name"`}},
		{name: "name with a space", src: "  - {name: run tests, type: script, command: x}\n",
			want: []string{`g.yaml:3:12: steps[0].name: invalid step name "run tests": use letters, digits, "_" and "-", starting with a letter or "_" (such as "run_tests")`}},
		{name: "name starting with a digit", src: "  - {name: 1st, type: script, command: x}\n",
			want: []string{`g.yaml:3:12: steps[0].name: invalid step name "1st": use letters, digits, "_" and "-", starting with a letter or "_" (such as "_1st")`}},
		{name: "hyphens are fine", src: "  - {name: run-tests, type: script, command: x}\n"},
		{name: "reserved name", src: "  - {name: previous, type: script, command: x}\n",
			want: []string{`g.yaml:3:12: steps[0].name: step name "previous" is reserved: {{.previous}} is the step that ran just before; use another, such as "previous_step"`}},
		{name: "reserved name in a loop", src: "  - name: l\n    type: loop\n    steps: [{name: bead, type: script, command: x}]\n",
			want: []string{`g.yaml:5:20: steps[0].steps[0].name: step name "bead" is reserved: {{.bead}} is the bead being worked on; use another, such as "bead_step"`}},
		{name: "duplicate names in nested steps", src: "  - {name: tests, type: script, command: x}\n  - name: l\n    type: loop\n    steps:\n      - {name: tests, type: script, command: y}\n      - name: inner\n        type: loop\n        steps: [{name: l, type: script, command: z}]\n",
			want: []string{
				`g.yaml:7:16: steps[1].steps[0].name: duplicate step name "tests" (first defined at line 3)`,
				`g.yaml:10:24: steps[1].steps[1].steps[0].name: duplicate step name "l" (first defined at line 4)`,
			}},
		{name: "a task may share a step's name", src: "  - {name: a, type: stage, tasks: [{id: a, adapter: claude}]}\n"},

		// types and keys
		{name: "missing type", src: "  - {name: a, command: x}\n",
			want: []string{`g.yaml:3:5: steps[0]: missing required key "type"`}},
		{name: "misspelt type", src: "  - name: a\n    type: agnet\n    spell: implement\n",
			want: []string{`g.yaml:4:11: steps[0].type: unknown step type "agnet" (did you mean "agent"?)`}},
		{name: "type is a list", src: "  - {name: a, type: [script], command: x}\n",
			want: []string{`g.yaml:3:21: steps[0].type: must be a string`}},
		{name: "unknown key with suggestion", src: "  - name: a\n    type: script\n    comand: x\n",
			want: []string{`g.yaml:3:5: steps[0]: missing required key "command"`, `g.yaml:5:5: steps[0]: unknown key "comand" (did you mean "command"?)`}},
		{name: "unknown key without suggestion", src: "  - {name: a, type: script, command: x, model: opus}\n",
			want: []string{`g.yaml:3:41: steps[0]: unknown key "model" (known: name, type, when, timeout, output, sandbox, command, on_fail, on_success)`}},
		{name: "a key of another type", src: "  - {name: a, type: agent, spell: x, command: y}\n",
			want: []string{`g.yaml:3:38: steps[0]: unknown key "command" for an agent step (it is a key of script steps)`}},
		{name: "a key of two other types", src: "  - {name: a, type: loop, steps: [{name: b, type: script, command: x}], on_fail: block}\n",
			want: []string{`g.yaml:3:73: steps[0]: unknown key "on_fail" for a loop step (it is a key of agent and script steps)`}},
		{name: "camelCase of a snake_case key", src: "  - {name: a, type: script, command: x, onFail: block}\n",
			want: []string{`g.yaml:3:41: steps[0]: unknown key "onFail" (did you mean "on_fail"?)`}},
		{name: "snake_case of a camelCase key", src: "  - {name: a, type: agent, spell: x, execution_mode: headless}\n",
			want: []string{`g.yaml:3:38: steps[0]: unknown key "execution_mode" (did you mean "executionMode"?)`}},
		{name: "max_iterations in camelCase", src: "  - {name: a, type: loop, maxIterations: 3, steps: [{name: b, type: script, command: x}]}\n",
			want: []string{`g.yaml:3:27: steps[0]: unknown key "maxIterations" (did you mean "max_iterations"?)`}},
		{name: "id on a step", src: "  - {name: a, id: a, type: script, command: x}\n",
			want: []string{`g.yaml:3:15: steps[0]: unknown key "id" (a grimoire and its steps are named by "name")`}},
		{name: "duplicate key", src: "  - {name: a, type: script, command: x, command: y}\n",
			want: []string{`g.yaml:3:41: steps[0]: duplicate key "command" (first defined at line 3)`}},

		// every step
		{name: "when without braces", src: "  - {name: a, type: script, command: x, when: previous.failed}\n",
			want: []string{`g.yaml:3:47: steps[0].when: must be a template that gives true or false, such as "{{.previous.failed}}"; "previous.failed" is neither`}},
		{name: "when that does not parse", src: "  - {name: a, type: script, command: x, when: \"{{.previous.failed\"}\n",
			want: []string{`g.yaml:3:47: steps[0].when: template line 1: unclosed action`}},
		{name: "when literal", src: "  - {name: a, type: script, command: x, when: false}\n"},
		{name: "bad step timeout", src: "  - {name: a, type: script, command: x, timeout: 0}\n",
			want: []string{`g.yaml:3:50: steps[0].timeout: must be a positive duration`}},
		{name: "output with a hyphen", src: "  - {name: a, type: script, command: x, output: test-output}\n",
			want: []string{`g.yaml:3:49: steps[0].output: invalid output name "test-output": use letters, digits and "_", starting with a letter or "_", so that {{.NAME}} can read it (such as "test_output")`}},
		{name: "reserved output", src: "  - {name: a, type: script, command: x, output: loop_entry}\n",
			want: []string{`g.yaml:3:49: steps[0].output: output name "loop_entry" is reserved: {{.loop_entry}} is the step that ran before the loop; use another, such as "loop_entry_output"`}},
		{name: "output named like a later step", src: "  - {name: a, type: script, command: x, output: b}\n  - {name: b, type: script, command: y}\n",
			want: []string{`g.yaml:3:49: steps[0].output: output "b" is also the name of a step (line 4): {{.b}} must mean one thing`}},
		{name: "output named like its own step", src: "  - {name: a, type: script, command: x, output: a}\n"},

		// agent
		{name: "agent without spell", src: "  - {name: a, type: agent}\n",
			want: []string{`g.yaml:3:5: steps[0]: missing required key "spell"`}},
		{name: "a one-line spell with spaces", src: "  - {name: a, type: agent, spell: Fix the tests}\n",
			want: []string{`g.yaml:3:35: steps[0].spell: "Fix the tests" is one line, so it names a spell file (.vibeteam/spells/NAME.md), which it cannot; write an inline spell as a block, "spell: |" and its text on the lines below`}},
		{name: "a spell name that climbs out", src: "  - {name: a, type: agent, spell: ../secret}\n",
			want: []string{`g.yaml:3:35: steps[0].spell: invalid spell name "../secret": must be a name under .vibeteam/spells, without ".." or a leading "/"`}},
		{name: "a spell in a folder", src: "  - {name: a, type: agent, spell: review/security}\n"},
		{name: "an inline spell that does not parse", src: "  - name: a\n    type: agent\n    spell: |\n      Fix it.\n      {{if .previous.failed}}again\n",
			want: []string{`g.yaml:5:12: steps[0].spell: template line 3: unexpected EOF`}},
		{name: "an inline spell may call functions render defines", src: "  - name: a\n    type: agent\n    spell: |\n      {{include \"rules.md\" x=\"y\"}} {{(step \"run-tests\").output}}\n"},
		{name: "input with a hyphen", src: "  - {name: a, type: agent, spell: x, input: {test-output: y}}\n",
			want: []string{`g.yaml:3:46: steps[0].input.test-output: invalid input name "test-output": use letters, digits and "_", starting with a letter or "_", so that the spell can read it as {{.NAME}} (such as "test_output")`}},
		{name: "reserved input", src: "  - {name: a, type: agent, spell: x, input: {goal: y}}\n",
			want: []string{`g.yaml:3:46: steps[0].input.goal: input name "goal" is reserved: {{.goal}} is the goal of the run; use another, such as "goal_input"`}},
		{name: "input not a map", src: "  - {name: a, type: agent, spell: x, input: [y]}\n",
			want: []string{`g.yaml:3:45: steps[0].input: must be a map of names to templates`}},
		{name: "input value a list", src: "  - {name: a, type: agent, spell: x, input: {y: [z]}}\n",
			want: []string{`g.yaml:3:49: steps[0].input.y: must be a string`}},
		{name: "input value that does not parse", src: "  - {name: a, type: agent, spell: x, input: {y: \"{{.z\"}}\n",
			want: []string{`g.yaml:3:49: steps[0].input.y: template line 1: unclosed action`}},
		{name: "input numbers are text", src: "  - {name: a, type: agent, spell: x, input: {n: 3}}\n"},
		{name: "unknown adapter", src: "  - {name: a, type: agent, spell: x, adapter: clade}\n",
			want: []string{`g.yaml:3:47: steps[0].adapter: unknown adapter "clade" (known: claude, codex, gemini, opencode, shell)`}},
		{name: "blank adapter", src: "  - {name: a, type: agent, spell: x, adapter: \" \"}\n",
			want: []string{`g.yaml:3:47: steps[0].adapter: must not be blank (leave it out for claude)`}},
		{name: "empty adapter is the default", src: "  - {name: a, type: agent, spell: x, adapter: \"\"}\n"},
		{name: "the default adapter must be registered", src: "  - {name: a, type: agent, spell: x}\n", opts: &none,
			want: []string{`g.yaml:3:5: steps[0].adapter: unknown adapter "claude" (no adapters are registered)`}},
		{name: "bad mode", src: "  - {name: a, type: agent, spell: x, executionMode: headles}\n",
			want: []string{`g.yaml:3:53: steps[0].executionMode: must be "interactive", "headless" or "acp", got "headles" (did you mean "headless"?)`}},
		{name: "interactive under --headless", src: "  - {name: a, type: agent, spell: x, executionMode: interactive}\n", opts: &force},
		{name: "agent on_fail", src: "  - {name: a, type: agent, spell: x, on_fail: blok}\n",
			want: []string{`g.yaml:3:47: steps[0].on_fail: must be "continue" or "block", got "blok" (did you mean "block"?)`}},
		{name: "extraArgs elements", src: "  - {name: a, type: agent, spell: x, extraArgs: [--model, 5]}\n",
			want: []string{`g.yaml:3:59: steps[0].extraArgs[1]: must be a string (write "5" in quotes)`}},

		// script
		{name: "script without command", src: "  - {name: a, type: script, command: \" \"}\n",
			want: []string{`g.yaml:3:38: steps[0].command: must not be empty`}},
		{name: "command that does not parse", src: "  - {name: a, type: script, command: \"echo {{.x\"}\n",
			want: []string{`g.yaml:3:38: steps[0].command: template: unclosed action`}},
		{name: "command with an unknown function", src: "  - {name: a, type: script, command: \"echo {{nofunc .x}}\"}\n",
			want: []string{`g.yaml:3:38: steps[0].command: template: function "nofunc" not defined`}},
		{name: "a command on several lines", src: "  - name: a\n    type: script\n    command: |\n      make\n      echo {{.x\n",
			want: []string{`g.yaml:5:14: steps[0].command: template line 3: unclosed action started at command:2`}},
		{name: "command with raw is a warning", src: "  - {name: a, type: script, command: \"{{raw .custom}}\"}\n"},
		{name: "values in quotes are placed", src: "  - {name: a, type: script, command: \"printf '%s' \\\"{{.x}}\\\" '{{.x}}'\"}\n"},
		{name: "values the shell would run", src: "  - name: a\n    type: script\n    command: |\n      echo ok\n      echo \"$(ls {{.x}})\" `{{.y}}`\n      cat <<EOF\n      {{.z}}\n      EOF\n",
			want: []string{
				`g.yaml:5:14: steps[0].command: template line 2: {{.x}} is inside $(...), where the shell reads a value as code; set a variable first (x={{.x}}) and use "$x" inside`,
				"g.yaml:5:14: steps[0].command: template line 2: {{.y}} is inside `...`, where the shell reads a value as code; set a variable first (x={{.y}}) and use \"$x\" inside",
				`g.yaml:5:14: steps[0].command: template line 4: {{.z}} is inside a here-document, where quotes are not read; set a variable first (x={{.z}}) and write $x in the here-document`,
			}},
		{name: "an unterminated quote", src: "  - {name: a, type: script, command: \"echo \\\"{{.x}}\"}\n",
			want: []string{"g.yaml:3:38: steps[0].command: template: the command does not parse as shell (reached EOF without closing quote `\"`), so vibeteam cannot tell where its values land to quote them"}},
		{name: "script on_fail", src: "  - {name: a, type: script, command: x, on_fail: stop}\n",
			want: []string{`g.yaml:3:50: steps[0].on_fail: must be "continue" or "block", got "stop"`}},
		{name: "script on_success", src: "  - name: l\n    type: loop\n    steps: [{name: a, type: script, command: x, on_success: exit-loop}]\n",
			want: []string{`g.yaml:5:61: steps[0].steps[0].on_success: must be "exit_loop", got "exit-loop" (did you mean "exit_loop"?)`}},
		{name: "exit_loop outside a loop", src: "  - {name: a, type: script, command: x, on_success: exit_loop}\n",
			want: []string{`g.yaml:3:53: steps[0].on_success: exit_loop leaves the enclosing loop, and this step is not in a loop`}},

		// loop
		{name: "loop without steps", src: "  - {name: l, type: loop}\n",
			want: []string{`g.yaml:3:5: steps[0]: missing required key "steps"`}},
		{name: "loop with no steps", src: "  - {name: l, type: loop, steps: []}\n",
			want: []string{`g.yaml:3:34: steps[0].steps: loop "l" needs at least one step`}},
		{name: "max_iterations zero", src: "  - {name: l, type: loop, max_iterations: 0, steps: [{name: a, type: script, command: x}]}\n",
			want: []string{`g.yaml:3:43: steps[0].max_iterations: must be at least 1`}},
		{name: "max_iterations not a number", src: "  - {name: l, type: loop, max_iterations: three, steps: [{name: a, type: script, command: x}]}\n",
			want: []string{`g.yaml:3:43: steps[0].max_iterations: must be a whole number, at least 1`}},
		{name: "max_iterations fractional", src: "  - {name: l, type: loop, max_iterations: 2.5, steps: [{name: a, type: script, command: x}]}\n",
			want: []string{`g.yaml:3:43: steps[0].max_iterations: must be a whole number, at least 1`}},
		{name: "on_max_iterations", src: "  - {name: l, type: loop, on_max_iterations: blocked, steps: [{name: a, type: script, command: x}]}\n",
			want: []string{`g.yaml:3:46: steps[0].on_max_iterations: must be "block", "exit" or "continue", got "blocked" (did you mean "block"?)`}},
		{name: "nested loops", src: "  - name: outer\n    type: loop\n    steps:\n      - name: inner\n        type: loop\n        steps: [{name: a, type: script, command: x, on_success: exit_loop}]\n"},

		// merge and stage
		{name: "merge", src: "  - {name: m, type: merge, require_review: false}\n"},
		{name: "merge with a bad key", src: "  - {name: m, type: merge, require_review: maybe}\n",
			want: []string{
				`g.yaml:3:44: steps[0].require_review: must be true or false`,
			}},
		{name: "stage without tasks", src: "  - {name: s, type: stage}\n",
			want: []string{`g.yaml:3:5: steps[0]: missing required key "tasks"`}},
		{name: "stage with no tasks", src: "  - {name: s, type: stage, tasks: []}\n",
			want: []string{`g.yaml:3:35: steps[0].tasks: stage "s" needs at least one task`}},
		{name: "stage task problems", src: "  - name: s\n    type: stage\n    tasks:\n      - {id: a, adapter: clade, promt: x}\n      - {id: a, adapter: claude, executionMode: headless}\n",
			want: []string{
				`g.yaml:6:26: steps[0].tasks[0].adapter: unknown adapter "clade" (known: claude, codex, gemini, opencode, shell)`,
				`g.yaml:6:33: steps[0].tasks[0]: unknown key "promt" (did you mean "prompt"?)`,
				`g.yaml:7:9: steps[0].tasks[1].prompt: a headless task needs a prompt`,
				`g.yaml:7:14: steps[0].tasks[1].id: duplicate task id "a" (first defined at line 6)`,
			}},
		{name: "task ids are unique in the file", src: "  - {name: s, type: stage, tasks: [{id: a, adapter: claude}]}\n  - name: l\n    type: loop\n    steps: [{name: t, type: stage, tasks: [{id: a, adapter: claude}]}]\n",
			want: []string{`g.yaml:6:49: steps[1].steps[0].tasks[0].id: duplicate task id "a" (first defined at line 3)`}},
		{name: "a task prompt is rendered at run time", src: "  - {name: s, type: stage, tasks: [{id: a, adapter: claude, prompt: \"{{(step \\\"x\\\").output}} {{.nowhere}}\"}]}\n",
			opts: &LoadOptions{Adapters: fake{}, Vars: map[string]string{}}},
		{name: "a task prompt that does not parse", src: "  - {name: s, type: stage, tasks: [{id: a, adapter: claude, prompt: \"{{.x\"}]}\n",
			want: []string{`g.yaml:3:69: steps[0].tasks[0].prompt: template line 1: unclosed action`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := defaultOpts()
			if tt.opts != nil {
				opts = *tt.opts
			}
			def, err := Parse([]byte(ghead+tt.src), "g.yaml", opts)
			if got := errLines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got: %q\nwant: %q", got, tt.want)
			}
			if err == nil {
				// What Parse accepts, Validate accepts.
				if errs := Validate(def, opts); errs != nil {
					t.Errorf("Validate: %v", errs)
				}
			}
		})
	}
}

// TestGrimoireManyErrors checks that every problem of a grimoire is
// reported, in file order.
func TestGrimoireManyErrors(t *testing.T) {
	const file = "testdata/grimoires/many-errors.yaml"
	want := []string{
		file + `:2:1: unknown key "descripton" (did you mean "description"?)`,
		file + `:5:11: steps[0].type: unknown step type "agnet" (did you mean "agent"?)`,
		file + `:7:5: steps[1]: missing required key "command"`,
		file + `:7:11: steps[1].name: invalid step name "run tests": use letters, digits, "_" and "-", starting with a letter or "_" (such as "run_tests")`,
		file + `:9:5: steps[1]: unknown key "comand" (did you mean "command"?)`,
		file + `:12:21: steps[2].max_iterations: must be at least 1`,
		file + `:13:24: steps[2].on_max_iterations: must be "block", "exit" or "continue", got "blocked" (did you mean "block"?)`,
		file + `:15:15: steps[2].steps[0].name: duplicate step name "implement" (first defined at line 4)`,
		file + `:18:21: steps[2].steps[0].on_success: must be "exit_loop", got "exit-loop" (did you mean "exit_loop"?)`,
		file + `:21:16: steps[2].steps[1].spell: "Fix the tests" is one line, so it names a spell file (.vibeteam/spells/NAME.md), which it cannot; write an inline spell as a block, "spell: |" and its text on the lines below`,
		file + `:22:9: steps[2].steps[1]: unknown key "command" for an agent step (it is a key of script steps)`,
		file + `:23:18: steps[2].steps[1].input.test-output: invalid input name "test-output": use letters, digits and "_", starting with a letter or "_", so that the spell can read it as {{.NAME}} (such as "test_output")`,
	}
	_, err := LoadFile(file, defaultOpts())
	if got := errLines(err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// stored grimoire: as it comes back from a session file, without positions.
func storedGrimoire() *Definition {
	def := everyKey()
	def.Source = "g.yaml"
	return def
}

func TestValidateGrimoire(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *Definition)
		opts   LoadOptions
		want   []string
	}{
		{name: "valid", change: func(*Definition) {}, opts: defaultOpts()},
		{name: "not normalized", change: func(d *Definition) {
			d.Timeout, d.Steps[0].Timeout, d.Steps[0].Agent.Adapter, d.Steps[0].Agent.OnFail = 0, 0, "", ""
			d.Steps[1].Loop.MaxIterations, d.Steps[1].Loop.OnMaxIterations = 0, ""
		}, opts: defaultOpts()},
		{name: "missing parts", change: func(d *Definition) {
			d.ID = ""
			d.Steps[0].Name = ""
			d.Steps[0].Agent = nil
			d.Steps[1].Loop.Steps[0].Type = ""
		}, want: []string{
			`g.yaml: missing required key "name"`,
			`g.yaml: steps[0]: missing required key "name"`,
			`g.yaml: steps[0]: missing required key "spell"`,
			`g.yaml: steps[1].steps[0]: missing required key "type"`,
		}},
		{name: "bad values", change: func(d *Definition) {
			d.Steps[0].Agent.OnFail = "Block"
			d.Steps[1].Loop.Steps[0].Script.OnSuccess = OnSuccessExitLoop
			d.Steps[1].Loop.Steps[3].Name = "run-tests"
			d.Steps[1].Loop.MaxIterations = -1
			d.Steps[1].Timeout = -1
		}, want: []string{
			`g.yaml: steps[1].steps[3].name: duplicate step name "run-tests" (first defined at steps[1].steps[0].name)`,
			`g.yaml: steps[0].on_fail: must be "continue" or "block", got "Block" (did you mean "block"?)`,
			`g.yaml: steps[1].timeout: must be a positive duration`,
			`g.yaml: steps[1].max_iterations: must be at least 1`,
		}},
		{name: "merge", change: func(d *Definition) { d.Steps[1].Loop.Steps[3] = Step{Type: StepMerge, Name: "m", Merge: &MergeStep{}} }},
		{name: "--headless and an adapter without that mode", change: func(*Definition) {},
			opts: LoadOptions{Adapters: noHeadless{}, ForceHeadless: true},
			want: []string{
				`g.yaml: steps[0].adapter: adapter "codex" has no headless mode (--headless runs every agent headless)`,
				`g.yaml: steps[1].steps[1].adapter: adapter "claude" has no headless mode`,
				`g.yaml: steps[1].steps[2].tasks[0].adapter: adapter "shell" has no headless mode`,
				`g.yaml: steps[1].steps[2].tasks[1].adapter: adapter "claude" has no headless mode (--headless runs every task headless)`,
			}},
		{name: "unknown kind of step in a stage workflow", change: func(d *Definition) { d.Kind = KindStages },
			want: []string{
				`g.yaml: stages[0]: step type "agent" is not supported yet`,
				`g.yaml: stages[1]: step type "loop" is not supported yet`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := storedGrimoire()
			tt.change(def)
			before := stripGrimoirePos(def)
			errs := Validate(def, tt.opts)
			if got := errLines(errs.Err()); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got: %q\nwant: %q", got, tt.want)
			}
			if !reflect.DeepEqual(stripGrimoirePos(def), before) {
				t.Error("Validate modified the definition")
			}
		})
	}
}

// noHeadless is a registry whose adapters have only an interactive mode.
type noHeadless struct{ fake }

func (noHeadless) HasMode(adapter, mode string) bool    { return mode == ModeInteractive }
func (noHeadless) TakesQueue(adapter, mode string) bool { return true }

// The checks of the agent CLI being installed cover agent steps, once per
// adapter.
func TestGrimoireCommandCheck(t *testing.T) {
	r := &registry{missing: map[string]bool{"codex": true}}
	src := ghead + "  - {name: a, type: agent, spell: x, adapter: codex}\n  - {name: b, type: agent, spell: x, adapter: codex}\n  - {name: c, type: agent, spell: x}\n"
	base := t.TempDir()
	writeSpell(t, base, "x.md", "do it\n")
	_, probs := Diagnose([]byte(src), "g.yaml", LoadOptions{Adapters: r, BaseDir: base, Commands: CheckWarn})
	if got := errLines(probs.Err()); !reflect.DeepEqual(got, []string{`g.yaml:3:47: warning: steps[0].adapter: codex is not installed`}) {
		t.Errorf("problems: %q", got)
	}
	if len(r.looked) != 2 {
		t.Errorf("looked up %v", r.looked)
	}
}

// The session stores the definition as JSON: a grimoire comes back the same,
// and a stage workflow is written as it always was.
func TestDefinitionJSON(t *testing.T) {
	def, err := LoadFile("testdata/grimoires/every-key.yaml", defaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	var back Definition
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, stripGrimoirePos(def)) {
		t.Errorf("round trip:\n got: %+v\nwant: %+v", &back, stripGrimoirePos(def))
	}
	if errs := Validate(&back, defaultOpts()); errs != nil {
		t.Errorf("Validate after the round trip: %v", errs)
	}

	stages := &Definition{Kind: KindStages, ID: "wf", Goal: "g", Steps: []Step{{Type: StepStage, ID: "s", Tasks: []Task{
		{ID: "a", Adapter: "claude", ExecutionMode: ModeHeadless, Prompt: "p"},
	}}}}
	data, err = json.Marshal(stages)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"kind":"stages","id":"wf","goal":"g","steps":[{"type":"stage","id":"s","tasks":[{"id":"a","adapter":"claude","executionMode":"headless","prompt":"p"}]}]}`
	if string(data) != want {
		t.Errorf("stage workflow JSON:\n got: %s\nwant: %s", data, want)
	}
}

func TestStepHelpers(t *testing.T) {
	def := everyKey()
	if s := def.FindStep("final"); s == nil || s.Script.OnSuccess != OnSuccessExitLoop {
		t.Errorf(`FindStep("final") = %+v`, s)
	}
	if s := def.FindStep("nope"); s != nil {
		t.Errorf(`FindStep("nope") = %+v`, s)
	}
	if got := def.Steps[0].Label(); got != "implement" {
		t.Errorf("Label = %q", got)
	}
	if got := (&Step{Type: StepStage, ID: "plan"}).Label(); got != "plan" {
		t.Errorf("Label of a stage = %q", got)
	}
	if def.Steps[0].Agent.InlineSpell() || !def.FindStep("fix").Agent.InlineSpell() {
		t.Error("InlineSpell")
	}
	if got := def.Steps[0].Agent.InputMap(); !reflect.DeepEqual(got, map[string]string{"focus": "{{.bead.title}}", "notes": "keep it small"}) {
		t.Errorf("InputMap = %v", got)
	}
}

func TestSanitizeName(t *testing.T) {
	for _, c := range []struct {
		in   string
		dash bool
		want string
	}{
		{"run tests", true, "run_tests"},
		{"run-tests", false, "run_tests"},
		{"1st", true, "_1st"},
		{"  a  b ", true, "a_b"},
		{"é", true, ""},
		{"-x", true, "_-x"},
		{"a.b.c", false, "a_b_c"},
	} {
		if got := sanitizeName(c.in, c.dash); got != c.want {
			t.Errorf("sanitizeName(%q, %v) = %q, want %q", c.in, c.dash, got, c.want)
		}
	}
}

func TestResolveGrimoires(t *testing.T) {
	base := t.TempDir()
	write := func(rel, src string) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const g = "name: x\nsteps:\n  - {name: a, type: script, command: echo user}\n"
	both := write(".vibeteam/grimoires/both.yaml", g)
	write(".coven/grimoires/both.yaml", g) // .vibeteam/grimoires wins
	coven := write(".coven/grimoires/coven-only.yml", g)
	wf := write(".vibeteam/workflows/shared.yaml", "id: x\n")
	write(".vibeteam/grimoires/shared.yaml", g) // .vibeteam/workflows wins
	override := write(".coven/grimoires/script-demo.yaml", g)

	for _, c := range []struct{ in, want string }{
		{"both", both},
		{"coven-only", coven},
		{"shared", wf},
		{"script-demo", override}, // a user file overrides a built-in
	} {
		got, err := Resolve(c.in, base)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		f, err := Locate(c.in, base)
		if err != nil || f.Path != c.want || f.Builtin() {
			t.Errorf("Locate(%q) = %+v, %v; want %q", c.in, f, err, c.want)
		}
	}

	// The built-ins come last.
	other := t.TempDir()
	f, err := Locate("script-demo", other)
	if err != nil || !f.Builtin() || f.Path != "builtin:script-demo.yaml" {
		t.Fatalf("Locate(script-demo) = %+v, %v", f, err)
	}
	def, err := f.Load(defaultOpts())
	if err != nil || def.Kind != KindGrimoire || def.Source != "builtin:script-demo.yaml" {
		t.Errorf("Load of the built-in = %+v, %v", def, err)
	}
	if f, err := Locate("demo", other); err != nil || !f.Builtin() {
		t.Errorf("Locate(demo) = %+v, %v", f, err)
	} else if def, probs := f.Diagnose(defaultOpts()); def == nil || def.Kind != KindStages || probs.HasErrors() {
		t.Errorf("Diagnose of the built-in demo = %+v, %v", def, probs)
	}
	if f, err := Locate(both, base); err != nil || f.Path != both {
		t.Errorf("Locate(path) = %+v, %v", f, err)
	} else if def, err := f.Load(defaultOpts()); err != nil || def.Kind != KindGrimoire {
		t.Errorf("Load(path) = %+v, %v", def, err)
	}

	// Not found: the nearest name, user files and built-ins alike.
	_, err = Resolve("covenonly", base)
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Suggestion != "coven-only" || !strings.HasSuffix(err.Error(), `; did you mean "coven-only"?`) {
		t.Errorf("Resolve(covenonly) = %v", err)
	}
	_, err = Locate("scrip-demo", other)
	if !errors.As(err, &nf) || nf.Suggestion != "script-demo" ||
		!strings.HasSuffix(err.Error(), `; did you mean "script-demo"? (built-in workflows: demo, implement-bead, prepare-pr, script-demo, spec-to-beads)`) {
		t.Errorf("Locate(scrip-demo) = %v", err)
	}
	// A built-in of that very name is no suggestion (Resolve leaves
	// built-ins to Locate).
	if _, err := Resolve("demo", other); !errors.As(err, &nf) || nf.Suggestion != "" {
		t.Errorf("Resolve(demo) = %v", err)
	}
	// A path is not looked for among the built-ins.
	if _, err := Locate("demo.yaml", other); !errors.As(err, &nf) || nf.Builtins != nil {
		t.Errorf("Locate(demo.yaml) = %v", err)
	}

	if got, want := NamedWorkflows(base), []string{"both", "coven-only", "demo", "implement-bead", "prepare-pr", "script-demo", "shared", "spec-to-beads"}; !slices.Equal(got, want) {
		t.Errorf("NamedWorkflows = %q, want %q", got, want)
	}
}

func TestCompactPaths(t *testing.T) {
	got := compactPaths([]string{"d/x.yaml", "d/x.yml", "d/x.json", "e/x.yaml", "f/y"})
	if want := []string{"d/x.{yaml,yml,json}", "e/x.yaml", "f/y"}; !slices.Equal(got, want) {
		t.Errorf("compactPaths = %q, want %q", got, want)
	}
}

func writeSpell(t *testing.T, base, name, text string) {
	t.Helper()
	dir := filepath.Join(base, ".vibeteam", "spells")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With the project's directory known, spells are checked as the run will
// find them (core/render), and the warnings of script commands are given by
// Diagnose (validate), not by Parse (run) nor Validate (resume).
func TestGrimoireProjectChecks(t *testing.T) {
	base := t.TempDir()
	writeSpell(t, base, "mine.md", "Fix {{.what}}\n{{include \"rules.md\" strict=\"yes\"}}\n")
	writeSpell(t, base, "rules.md", "Be {{.strict}}.\n")
	writeSpell(t, base, "broken.md", "{{.x\n")
	src := ghead + `  - {name: a, type: agent, spell: mine}
  - {name: b, type: agent, spell: missing}
  - {name: c, type: agent, spell: broken}
  - name: d
    type: agent
    spell: |
      Inline, with a partial that is not there:
      {{include "nowhere.md" x="y"}}
  - {name: e, type: script, command: "echo '{{.a.output}}' $({{.a.output}})"}
`
	opts := LoadOptions{Adapters: fake{}, BaseDir: base}
	_, probs := Diagnose([]byte(src), "g.yaml", opts)
	want := []string{
		`g.yaml:4:35: steps[1].spell: spell "missing" not found (looked for .vibeteam/spells/missing.md, .coven/spells/missing.md, and among the built-in spells)`,
		`g.yaml:5:35: steps[2].spell: spell "broken" (.vibeteam/spells/broken.md): line 2: unclosed action started at spell:1`,
		`g.yaml:8:12: steps[3].spell: inline spell: partial "nowhere" not found (looked for .vibeteam/spells/nowhere.md, .coven/spells/nowhere.md, and among the built-in spells)`,
		`g.yaml:11:38: steps[4].command: template: {{.a.output}} is inside $(...), where the shell reads a value as code; set a variable first (x={{.a.output}}) and use "$x" inside`,
	}
	if got := errLines(probs.Err()); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}

	// Warnings alone: Parse loads it, Validate says nothing.
	src = ghead + "  - {name: a, type: agent, spell: mine}\n  - {name: e, type: script, command: \"{{raw .a.output}}\"}\n"
	def, probs := Diagnose([]byte(src), "g.yaml", opts)
	if def == nil || len(probs) != 1 || !probs[0].Warning {
		t.Errorf("Diagnose = %v, %v; want a definition and one warning", def, probs)
	}
	def, err := Parse([]byte(src), "g.yaml", opts)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if errs := Validate(def, opts); errs != nil {
		t.Errorf("Validate: %v", errs)
	}
}
