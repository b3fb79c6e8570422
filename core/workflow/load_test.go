package workflow

import (
	"errors"
	"github.com/vibeteam/vibeteam/internal/suggest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// head is a workflow up to the keys of its only task, which start at line 6,
// column 9.
const head = "id: wf\nstages:\n  - id: s\n    tasks:\n      - id: a\n"

func defaultOpts() LoadOptions { return LoadOptions{Adapters: fake{}} }

// errLines is err as the user sees it, one problem per line.
func errLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestParseValidYAMLAndJSON(t *testing.T) {
	want := &Definition{
		Kind: KindStages,
		ID:   "feature-dev",
		Goal: "Add a login page",
		Steps: []Step{
			{Type: StepStage, ID: "plan", Tasks: []Task{{
				ID: "architect", Adapter: "claude", ExecutionMode: ModeHeadless,
				Prompt: "Write PLAN.md for a login page", Timeout: Duration(10 * time.Minute),
			}}},
			{Type: StepStage, ID: "build", Tasks: []Task{
				{
					ID: "frontend", Adapter: "gemini", ExecutionMode: ModeInteractive,
					Prompt:    "Implement the UI described in PLAN.md",
					ExtraArgs: []string{"--model", "gemini-2.5-pro"}, Cwd: "web",
					Env: map[string]string{"NODE_ENV": "development"}, Name: "Frontend",
				},
				{
					ID: "tui", Adapter: "claude", ExecutionMode: ModeInteractive,
					PendingInputs: []string{"/review", "/cost"},
				},
			}},
		},
	}
	for _, file := range []string{"testdata/feature-dev.yaml", "testdata/feature-dev.json"} {
		t.Run(filepath.Ext(file), func(t *testing.T) {
			def, err := LoadFile(file, defaultOpts())
			if err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			if def.Source != file {
				t.Errorf("Source = %q, want %q", def.Source, file)
			}
			// Positions differ between the two files; they are checked below.
			got := stripPos(def)
			w := *want
			w.Source = file
			if !reflect.DeepEqual(got, &w) {
				t.Errorf("definition mismatch\n got: %+v\nwant: %+v", got, &w)
			}
			if p := def.Steps[1].Pos; p.File != file || p.Line == 0 || p.Col == 0 {
				t.Errorf("stage position = %+v, want a line and column in %s", p, file)
			}
			if p := def.Steps[1].Tasks[1].Pos; p.Line == 0 {
				t.Errorf("task position = %+v, want a line", p)
			}
			if errs := Validate(def, defaultOpts()); errs != nil {
				t.Errorf("Validate of a parsed definition: %v", errs)
			}
		})
	}
}

func stripPos(def *Definition) *Definition {
	d := *def
	d.Steps = append([]Step(nil), def.Steps...)
	for i := range d.Steps {
		d.Steps[i].Pos = Pos{}
		d.Steps[i].Tasks = append([]Task(nil), d.Steps[i].Tasks...)
		for j := range d.Steps[i].Tasks {
			d.Steps[i].Tasks[j].Pos = Pos{}
		}
	}
	return &d
}

func TestParsePositions(t *testing.T) {
	def, err := Parse([]byte(head+"        adapter: claude\n"), "wf.yaml", defaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := def.Steps[0].Pos, (Pos{File: "wf.yaml", Line: 3, Col: 5}); got != want {
		t.Errorf("stage Pos = %+v, want %+v", got, want)
	}
	if got, want := def.Steps[0].Tasks[0].Pos, (Pos{File: "wf.yaml", Line: 5, Col: 9}); got != want {
		t.Errorf("task Pos = %+v, want %+v", got, want)
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name  string
		task  string
		opts  LoadOptions
		check func(t *testing.T, task Task)
	}{
		{"mode defaults to interactive", "        adapter: claude\n", defaultOpts(), func(t *testing.T, task Task) {
			if task.ExecutionMode != ModeInteractive {
				t.Errorf("ExecutionMode = %q", task.ExecutionMode)
			}
		}},
		{"force headless", "        adapter: claude\n        prompt: hi\n", LoadOptions{Adapters: fake{}, ForceHeadless: true}, func(t *testing.T, task Task) {
			if task.ExecutionMode != ModeHeadless {
				t.Errorf("ExecutionMode = %q", task.ExecutionMode)
			}
		}},
		{"no adapter registry accepts any adapter", "        adapter: my-own\n", LoadOptions{}, func(t *testing.T, task Task) {
			if task.Adapter != "my-own" {
				t.Errorf("Adapter = %q", task.Adapter)
			}
		}},
		{"timeout in seconds", "        adapter: claude\n        timeout: 90\n", defaultOpts(), func(t *testing.T, task Task) {
			if task.Timeout != Duration(90*time.Second) {
				t.Errorf("Timeout = %v", time.Duration(task.Timeout))
			}
		}},
		{"timeout in fractional seconds", "        adapter: claude\n        timeout: 1.5\n", defaultOpts(), func(t *testing.T, task Task) {
			if task.Timeout != Duration(1500*time.Millisecond) {
				t.Errorf("Timeout = %v", time.Duration(task.Timeout))
			}
		}},
		{"timeout as duration", "        adapter: claude\n        timeout: 1h30m\n", defaultOpts(), func(t *testing.T, task Task) {
			if task.Timeout != Duration(90*time.Minute) {
				t.Errorf("Timeout = %v", time.Duration(task.Timeout))
			}
		}},
		{"scalars as text", "        adapter: claude\n        name: 2024\n        cwd: 1.5\n        prompt: true\n", defaultOpts(), func(t *testing.T, task Task) {
			if task.Name != "2024" || task.Cwd != "1.5" || task.Prompt != "true" {
				t.Errorf("Name, Cwd, Prompt = %q, %q, %q", task.Name, task.Cwd, task.Prompt)
			}
		}},
		{"quoted env number", "        adapter: claude\n        env: {NODE_ENV: \"1\", EMPTY: \"\"}\n", defaultOpts(), func(t *testing.T, task Task) {
			if !reflect.DeepEqual(task.Env, map[string]string{"NODE_ENV": "1", "EMPTY": ""}) {
				t.Errorf("Env = %v", task.Env)
			}
		}},
		{"keepAlive", "        adapter: claude\n        keepAlive: true\n", defaultOpts(), func(t *testing.T, task Task) {
			if !task.KeepAlive {
				t.Error("KeepAlive = false")
			}
		}},
		{"nulls are absent", "        adapter: claude\n        prompt:\n        extraArgs:\n        env:\n        timeout:\n        keepAlive:\n", defaultOpts(), func(t *testing.T, task Task) {
			if task.Prompt != "" || task.ExtraArgs != nil || task.Env != nil || task.Timeout != 0 || task.KeepAlive {
				t.Errorf("task = %+v", task)
			}
		}},
		{"block prompt", "        adapter: claude\n        prompt: |\n          line one\n          line two\n", defaultOpts(), func(t *testing.T, task Task) {
			if task.Prompt != "line one\nline two\n" {
				t.Errorf("Prompt = %q", task.Prompt)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, err := Parse([]byte(head+tt.task), "wf.yaml", tt.opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.check(t, def.Steps[0].Tasks[0])
		})
	}
}

func TestParseAliasesAndMergeKeys(t *testing.T) {
	src := `id: wf
stages:
  - id: s
    tasks:
      - &base
        id: a
        adapter: codex
        executionMode: headless
        prompt: review
        env: &env { A: "1" }
      - <<: *base
        id: b
        env: *env
      - <<: [*base]
        id: c
        prompt: other
`
	def, err := Parse([]byte(src), "wf.yaml", defaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	tasks := def.Steps[0].Tasks
	if len(tasks) != 3 {
		t.Fatalf("got %d tasks", len(tasks))
	}
	for _, task := range tasks[1:] {
		if task.Adapter != "codex" || task.ExecutionMode != ModeHeadless {
			t.Errorf("task %s did not get merged keys: %+v", task.ID, task)
		}
	}
	if tasks[1].Env["A"] != "1" || tasks[1].Prompt != "review" || tasks[2].Prompt != "other" {
		t.Errorf("tasks = %+v", tasks)
	}
}

func TestParseErrors(t *testing.T) {
	force := LoadOptions{Adapters: fake{}, ForceHeadless: true}
	tests := []struct {
		name string
		file string // default wf.yaml
		src  string
		opts *LoadOptions // default: the fake adapters
		want []string
	}{
		// adapters
		{name: "unknown adapter", src: head + "        adapter: clade\n",
			want: []string{`wf.yaml:6:18: stages[0].tasks[0].adapter: unknown adapter "clade" (known: claude, codex, gemini, opencode, shell)`}},
		{name: "missing adapter", src: head + "        prompt: hi\n",
			want: []string{`wf.yaml:5:9: stages[0].tasks[0]: missing required key "adapter"`}},
		{name: "empty adapter", src: head + "        adapter: \"\"\n",
			want: []string{`wf.yaml:6:18: stages[0].tasks[0].adapter: must not be empty`}},
		{name: "missing adapter without registry", src: head + "        prompt: hi\n", opts: &LoadOptions{},
			want: []string{`wf.yaml:5:9: stages[0].tasks[0]: missing required key "adapter"`}},

		// stages and ids
		{name: "empty stages", src: "id: wf\nstages: []\n",
			want: []string{`wf.yaml:2:9: stages: a workflow needs at least one stage`}},
		{name: "null stages", src: "id: wf\nstages:\n",
			want: []string{`wf.yaml:2:8: stages: a workflow needs at least one stage`}},
		{name: "missing stages", src: "id: wf\n",
			want: []string{`wf.yaml:1:1: missing required key "stages"`}},
		{name: "missing workflow id", src: "goal: g\nstages:\n  - id: s\n    tasks: [{id: a, adapter: claude}]\n",
			want: []string{`wf.yaml:1:1: missing required key "id"`}},
		{name: "empty workflow id", src: "id: ''\nstages:\n  - id: s\n    tasks: [{id: a, adapter: claude}]\n",
			want: []string{`wf.yaml:1:5: id: must not be empty`}},
		{name: "stage without tasks", src: "id: wf\nstages:\n  - id: s\n    tasks: []\n",
			want: []string{`wf.yaml:4:12: stages[0].tasks: stage "s" needs at least one task`}},
		{name: "stage without tasks key", src: "id: wf\nstages:\n  - id: s\n",
			want: []string{`wf.yaml:3:5: stages[0]: missing required key "tasks"`}},
		{name: "stage without id", src: "id: wf\nstages:\n  - tasks: [{id: a, adapter: claude}]\n",
			want: []string{`wf.yaml:3:5: stages[0]: missing required key "id"`}},
		{name: "duplicate stage id", src: "id: wf\nstages:\n  - id: s\n    tasks: [{id: a, adapter: claude}]\n  - id: s\n    tasks: [{id: b, adapter: claude}]\n",
			want: []string{`wf.yaml:5:9: stages[1].id: duplicate stage id "s" (first defined at line 3)`}},
		{name: "task without id", src: "id: wf\nstages:\n  - id: s\n    tasks:\n      - adapter: claude\n",
			want: []string{`wf.yaml:5:9: stages[0].tasks[0]: missing required key "id"`}},
		{name: "duplicate task id across stages", src: head + "        adapter: claude\n  - id: t\n    tasks:\n      - id: b\n        adapter: claude\n      - id: a\n        adapter: codex\n",
			want: []string{`wf.yaml:11:13: stages[1].tasks[1].id: duplicate task id "a" (first defined at line 5)`}},
		{name: "stage and task may share an id", src: "id: wf\nstages:\n  - id: a\n    tasks: [{id: a, adapter: claude}]\n"},
		{name: "numeric ids are text", src: "id: 1\nstages:\n  - id: 2\n    tasks: [{id: 3, adapter: claude}]\n"},
		{name: "id with a slash", src: "id: wf\nstages:\n  - id: s\n    tasks:\n      - id: ../etc\n        adapter: claude\n",
			want: []string{`wf.yaml:5:13: stages[0].tasks[0].id: invalid task id "../etc": must not contain "/" or "\"`}},
		{name: "id dot dot", src: "id: wf\nstages:\n  - id: ..\n    tasks: [{id: a, adapter: claude}]\n",
			want: []string{`wf.yaml:3:9: stages[0].id: invalid stage id "..": must not be "." or ".."`}},
		{name: "id is not a string", src: "id: [wf]\nstages:\n  - id: s\n    tasks: [{id: a, adapter: claude}]\n",
			want: []string{`wf.yaml:1:5: id: must be a string`}},

		// execution mode and prompts
		{name: "bad execution mode", src: head + "        adapter: claude\n        executionMode: foo\n",
			want: []string{`wf.yaml:7:24: stages[0].tasks[0].executionMode: must be "interactive", "headless" or "acp", got "foo"`}},
		{name: "headless without prompt", src: head + "        adapter: claude\n        executionMode: headless\n",
			want: []string{`wf.yaml:5:9: stages[0].tasks[0].prompt: a headless task needs a prompt`}},
		{name: "headless with blank prompt", src: head + "        adapter: claude\n        executionMode: headless\n        prompt: \"  \"\n",
			want: []string{`wf.yaml:8:17: stages[0].tasks[0].prompt: a headless task needs a prompt`}},
		{name: "interactive without prompt is fine", src: head + "        adapter: claude\n"},
		{name: "force headless without prompt", src: head + "        adapter: claude\n", opts: &force,
			want: []string{`wf.yaml:5:9: stages[0].tasks[0].prompt: task "a" has no prompt; --headless runs every task headless, and a headless task needs a prompt`}},
		{name: "force headless on a headless task", src: head + "        adapter: claude\n        executionMode: headless\n", opts: &force,
			want: []string{`wf.yaml:5:9: stages[0].tasks[0].prompt: a headless task needs a prompt`}},
		{name: "force headless with prompt", src: head + "        adapter: claude\n        prompt: go\n", opts: &force},

		// lists and maps of strings
		{name: "extraArgs elements", src: head + "        adapter: claude\n        extraArgs: [--model, 5, {a: b}, true]\n",
			want: []string{
				`wf.yaml:7:30: stages[0].tasks[0].extraArgs[1]: must be a string (write "5" in quotes)`,
				`wf.yaml:7:33: stages[0].tasks[0].extraArgs[2]: must be a string`,
				`wf.yaml:7:41: stages[0].tasks[0].extraArgs[3]: must be a string (write "true" in quotes)`,
			}},
		{name: "extraArgs not a list", src: head + "        adapter: claude\n        extraArgs: --verbose\n",
			want: []string{`wf.yaml:7:20: stages[0].tasks[0].extraArgs: must be a list of strings`}},
		{name: "pendingInputs elements", src: head + "        adapter: claude\n        pendingInputs:\n          - /review\n          - 42\n",
			want: []string{`wf.yaml:9:13: stages[0].tasks[0].pendingInputs[1]: must be a string (write "42" in quotes)`}},
		{name: "pendingInputs not a list", src: head + "        adapter: claude\n        pendingInputs: {a: b}\n",
			want: []string{`wf.yaml:7:24: stages[0].tasks[0].pendingInputs: must be a list of strings`}},
		{name: "env number value", src: head + "        adapter: claude\n        env:\n          NODE_ENV: 1\n",
			want: []string{`wf.yaml:8:21: stages[0].tasks[0].env.NODE_ENV: must be a string (write "1" in quotes)`}},
		{name: "env nested value", src: head + "        adapter: claude\n        env: {A: [x]}\n",
			want: []string{`wf.yaml:7:18: stages[0].tasks[0].env.A: must be a string`}},
		{name: "env not a map", src: head + "        adapter: claude\n        env: [A=1]\n",
			want: []string{`wf.yaml:7:14: stages[0].tasks[0].env: must be a map of strings`}},
		{name: "env bad name", src: head + "        adapter: claude\n        env: {\"A=B\": x}\n",
			want: []string{`wf.yaml:7:15: stages[0].tasks[0].env: invalid environment variable name "A=B"`}},

		// scalar types
		{name: "keepAlive not a bool", src: head + "        adapter: claude\n        keepAlive: yes\n",
			want: []string{`wf.yaml:7:20: stages[0].tasks[0].keepAlive: must be true or false`}},
		{name: "prompt is a map", src: head + "        adapter: claude\n        prompt: {a: b}\n",
			want: []string{`wf.yaml:7:17: stages[0].tasks[0].prompt: must be a string`}},
		{name: "adapter is a list", src: head + "        adapter: [claude]\n",
			want: []string{`wf.yaml:6:18: stages[0].tasks[0].adapter: must be a string`}},
		{name: "timeout zero", src: head + "        adapter: claude\n        timeout: 0\n",
			want: []string{`wf.yaml:7:18: stages[0].tasks[0].timeout: must be a positive duration`}},
		{name: "timeout negative", src: head + "        adapter: claude\n        timeout: -5m\n",
			want: []string{`wf.yaml:7:18: stages[0].tasks[0].timeout: must be a positive duration`}},
		{name: "timeout not a duration", src: head + "        adapter: claude\n        timeout: soon\n",
			want: []string{`wf.yaml:7:18: stages[0].tasks[0].timeout: invalid duration "soon": write it like "90s", "10m" or "1h30m", or as a number of seconds`}},
		{name: "timeout without unit in quotes", src: head + "        adapter: claude\n        timeout: \"10\"\n",
			want: []string{`wf.yaml:7:18: stages[0].tasks[0].timeout: invalid duration "10": write it like "90s", "10m" or "1h30m", or as a number of seconds`}},
		{name: "timeout is a list", src: head + "        adapter: claude\n        timeout: [1]\n",
			want: []string{`wf.yaml:7:18: stages[0].tasks[0].timeout: must be a duration like "10m" or a number of seconds`}},
		{name: "timeout out of range", src: head + "        adapter: claude\n        timeout: 99999999999999999\n",
			want: []string{`wf.yaml:7:18: stages[0].tasks[0].timeout: number of seconds is out of range`}},
		{name: "timeout nan", src: head + "        adapter: claude\n        timeout: .nan\n",
			want: []string{`wf.yaml:7:18: stages[0].tasks[0].timeout: must be a duration like "10m" or a number of seconds`}},

		// shapes
		{name: "stages not a list", src: "id: wf\nstages: {a: b}\n",
			want: []string{`wf.yaml:2:9: stages: must be a list of stages`}},
		{name: "stage not a mapping", src: "id: wf\nstages:\n  - plan\n",
			want: []string{`wf.yaml:3:5: stages[0]: must be a mapping with "id" and "tasks"`}},
		{name: "tasks not a list", src: "id: wf\nstages:\n  - id: s\n    tasks: claude\n",
			want: []string{`wf.yaml:4:12: stages[0].tasks: must be a list of tasks`}},
		{name: "task not a mapping", src: "id: wf\nstages:\n  - id: s\n    tasks: [claude]\n",
			want: []string{`wf.yaml:4:13: stages[0].tasks[0]: must be a mapping with "id" and "adapter"`}},
		{name: "top level is a list", src: "- id: wf\n",
			want: []string{`wf.yaml:1:1: the top level must be a mapping with "id" and "stages"`}},
		{name: "top level is a scalar", src: "hello\n",
			want: []string{`wf.yaml:1:1: the top level must be a mapping with "id" and "stages"`}},
		// "steps" makes a grimoire (see grimoire_test.go)
		{name: "grimoire", src: "name: implement\nsteps:\n  - name: x\n",
			want: []string{`wf.yaml:3:5: steps[0]: missing required key "type"`}},
		{name: "grimoire without name", src: "steps: []\n",
			want: []string{
				`wf.yaml:1:1: missing required key "name"`,
				`wf.yaml:1:8: steps: a grimoire needs at least one step`,
			}},

		// keys
		{name: "unknown task key with suggestion", src: head + "        adapter: claude\n        promt: hi\n",
			want: []string{`wf.yaml:7:9: stages[0].tasks[0]: unknown key "promt" (did you mean "prompt"?)`}},
		{name: "snake case key", src: head + "        adapter: claude\n        execution_mode: headless\n",
			want: []string{`wf.yaml:7:9: stages[0].tasks[0]: unknown key "execution_mode" (did you mean "executionMode"?)`}},
		{name: "wrong case key", src: head + "        Adapter: claude\n",
			want: []string{
				`wf.yaml:5:9: stages[0].tasks[0]: missing required key "adapter"`,
				`wf.yaml:6:9: stages[0].tasks[0]: unknown key "Adapter" (did you mean "adapter"?)`,
			}},
		{name: "unknown key without suggestion", src: head + "        adapter: claude\n        model: opus\n",
			want: []string{`wf.yaml:7:9: stages[0].tasks[0]: unknown key "model" (known: id, adapter, executionMode, prompt, extraArgs, cwd, env, name, pendingInputs, keepAlive, timeout, inactivityTimeout, mcp, sandbox)`}},
		{name: "unknown stage key", src: "id: wf\nstages:\n  - id: s\n    taks: []\n    tasks: [{id: a, adapter: claude}]\n",
			want: []string{`wf.yaml:4:5: stages[0]: unknown key "taks" (did you mean "tasks"?)`}},
		{name: "unknown top key", src: "id: wf\ngaol: x\nstages:\n  - id: s\n    tasks: [{id: a, adapter: claude}]\n",
			want: []string{`wf.yaml:2:1: unknown key "gaol" (did you mean "goal"?)`}},
		{name: "short unknown key gets no suggestion", src: "id: wf\nx: 1\nstages:\n  - id: s\n    tasks: [{id: a, adapter: claude}]\n",
			want: []string{`wf.yaml:2:1: unknown key "x" (known: id, goal, stages, mcp, secrets, sandbox)`}},
		{name: "duplicate key", src: head + "        adapter: claude\n        adapter: codex\n",
			want: []string{`wf.yaml:7:9: stages[0].tasks[0]: duplicate key "adapter" (first defined at line 6)`}},
		{name: "bad merge", src: head + "        adapter: claude\n        <<: 5\n",
			want: []string{`wf.yaml:7:13: stages[0].tasks[0]: << must merge a mapping or a list of mappings`}},

		// JSON
		{name: "json errors", file: "wf.json", src: "{\n  \"id\": \"wf\",\n  \"stages\": [{\"id\": \"s\", \"tasks\": [\n    {\"id\": \"a\", \"adapter\": \"clade\", \"env\": {\"N\": 1}, \"promt\": \"x\"}\n  ]}]\n}\n",
			want: []string{
				`wf.json:4:28: stages[0].tasks[0].adapter: unknown adapter "clade" (known: claude, codex, gemini, opencode, shell)`,
				`wf.json:4:50: stages[0].tasks[0].env.N: must be a string (write "1" in quotes)`,
				`wf.json:4:54: stages[0].tasks[0]: unknown key "promt" (did you mean "prompt"?)`,
			}},
		{name: "json with tabs", file: "wf.json", src: "{\n\t\"id\": \"wf\",\n\t\"stages\": []\n}\n",
			want: []string{`wf.json:3:12: stages: a workflow needs at least one stage`}},

		// files that are not workflows at all
		{name: "empty", src: "", want: []string{`wf.yaml:1:1: file is empty`}},
		{name: "blank", src: " \n\t\n", want: []string{`wf.yaml:1:1: file is empty`}},
		{name: "comments only", src: "# nothing yet\n", want: []string{`wf.yaml:1:1: file is empty`}},
		{name: "document marker only", src: "---\n", want: []string{`wf.yaml:1:1: file is empty`}},
		{name: "two documents", src: "id: a\n---\nid: b\n",
			want: []string{`wf.yaml:3:1: a file holds one workflow; found a second YAML document`}},
		{name: "malformed yaml", src: "id: wf\nstages:\n  - id: a\n   tasks: b\n",
			want: []string{`wf.yaml:3: invalid YAML: did not find expected '-' indicator`}},
		{name: "tab indentation", src: "id: wf\n\tstages: []\n",
			want: []string{`wf.yaml:2: invalid YAML: found a tab character that violates indentation`}},
		{name: "malformed json", file: "wf.json", src: "{\n  \"id\": \"wf\",\n  \"stages\": [\n}\n",
			want: []string{`wf.json:4:1: invalid JSON: invalid character '}' looking for beginning of value`}},
		{name: "unterminated json string", file: "wf.json", src: "{\n  \"id\": \"wf,\n  \"stages\": []\n",
			want: []string{`wf.json:2:13: invalid JSON: invalid character '\n' in string literal`}},
		{name: "control character", src: "id: \x01\n",
			want: []string{`wf.yaml:1:5: invalid YAML: control characters are not allowed`}},
		{name: "undefined alias", src: "id: *nope\n",
			want: []string{`wf.yaml:1:5: invalid YAML: unknown anchor 'nope' referenced`}},
		{name: "undefined alias, placed past text that only looks like one", src: "id: wf # *nope\ngoal: \"*nope\"\nstages:\n  - id: s\n    tasks: [{id: a, adapter: *nope}]\n",
			want: []string{`wf.yaml:5:30: invalid YAML: unknown anchor 'nope' referenced`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "wf.yaml"
			}
			opts := defaultOpts()
			if tt.opts != nil {
				opts = *tt.opts
			}
			def, err := Parse([]byte(tt.src), file, opts)
			if got := errLines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got: %q\nwant: %q", got, tt.want)
			}
			if err != nil {
				if def != nil {
					t.Error("Parse returned a definition with errors")
				}
				var list ErrorList
				if !errors.As(err, &list) || len(list) == 0 {
					t.Errorf("error is %T, want a non-empty ErrorList", err)
				}
			} else if def == nil {
				t.Error("Parse returned neither a definition nor an error")
			}
		})
	}
}

// TestParseManyErrors checks that every problem of a file is reported, in
// file order, in both formats.
func TestParseManyErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"testdata/many-errors.yaml", []string{
			`testdata/many-errors.yaml:2:1: unknown key "gola" (did you mean "goal"?)`,
			`testdata/many-errors.yaml:6:9: stages[0].tasks[0].prompt: a headless task needs a prompt`,
			`testdata/many-errors.yaml:7:18: stages[0].tasks[0].adapter: unknown adapter "clade" (known: claude, codex, gemini, opencode, shell)`,
			`testdata/many-errors.yaml:9:9: stages[0].tasks[0]: unknown key "promt" (did you mean "prompt"?)`,
			`testdata/many-errors.yaml:10:9: stages[1].id: duplicate stage id "plan" (first defined at line 4)`,
			`testdata/many-errors.yaml:12:13: stages[1].tasks[0].id: duplicate task id "architect" (first defined at line 6)`,
			`testdata/many-errors.yaml:14:24: stages[1].tasks[0].executionMode: must be "interactive", "headless" or "acp", got "foo"`,
			`testdata/many-errors.yaml:15:30: stages[1].tasks[0].extraArgs[1]: must be a string (write "5" in quotes)`,
			`testdata/many-errors.yaml:15:33: stages[1].tasks[0].extraArgs[2]: must be a string`,
			`testdata/many-errors.yaml:16:26: stages[1].tasks[0].env.NODE_ENV: must be a string (write "1" in quotes)`,
			`testdata/many-errors.yaml:17:20: stages[1].tasks[0].keepAlive: must be true or false`,
			`testdata/many-errors.yaml:18:18: stages[1].tasks[0].timeout: invalid duration "soon": write it like "90s", "10m" or "1h30m", or as a number of seconds`,
			`testdata/many-errors.yaml:20:12: stages[2].tasks: stage "empty" needs at least one task`,
		}},
		{"testdata/many-errors.json", []string{
			`testdata/many-errors.json:7:9: stages[0].tasks[0].prompt: a headless task needs a prompt`,
			`testdata/many-errors.json:7:32: stages[0].tasks[0].adapter: unknown adapter "clade" (known: claude, codex, gemini, opencode, shell)`,
			`testdata/many-errors.json:8:16: stages[0].tasks[1].id: duplicate task id "a" (first defined at line 7)`,
			`testdata/many-errors.json:8:63: stages[0].tasks[1].extraArgs[1]: must be a string (write "1" in quotes)`,
			`testdata/many-errors.json:8:80: stages[0].tasks[1].env.N: must be a string (write "true" in quotes)`,
			`testdata/many-errors.json:12:3: unknown key "promt" (known: id, goal, stages, mcp, secrets, sandbox)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := LoadFile(tt.file, defaultOpts())
			if got := errLines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}

func TestParseAliasBomb(t *testing.T) {
	// Each level multiplies the previous one by ten: 10^6 extraArgs from a
	// few hundred bytes.
	var b strings.Builder
	b.WriteString("id: wf\nstages:\n  - &s\n    id: s\n    tasks:\n      - &t\n        id: t\n        adapter: claude\n        extraArgs: &a [")
	b.WriteString(strings.Repeat("x, ", 99) + "x]\n")
	b.WriteString("  - {id: s2, tasks: &ts [" + strings.Repeat("*t, ", 99) + "*t]}\n")
	b.WriteString("  - {id: s3, tasks: [" + strings.Repeat("{id: u, adapter: claude, extraArgs: [*a, *a]}, ", 3) + "]}\n")
	for i := 0; i < 200; i++ {
		b.WriteString("  - {id: s, tasks: *ts}\n")
	}
	start := time.Now()
	_, err := Parse([]byte(b.String()), "bomb.yaml", defaultOpts())
	if err == nil || !strings.Contains(err.Error(), "through aliases") {
		t.Fatalf("err = %.500v, want the alias budget error", err)
	}
	// A hang guard, not a timing target (that the budget stops the walk
	// early is what the error says): without the budget this parse does
	// not end. Generous, for -race on a loaded machine.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v", d)
	}
}

func TestLoadFileReadError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := LoadFile(missing, defaultOpts())
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("err = %v, want it to name %s", err, missing)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want it to wrap os.ErrNotExist", err)
	}
	var list ErrorList
	if errors.As(err, &list) {
		t.Error("a read failure should not be an ErrorList")
	}

	dir := t.TempDir()
	if _, err := LoadFile(dir, defaultOpts()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("LoadFile(dir) = %v, want a directory error", err)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{Pos: Pos{File: "f.yaml", Line: 3, Col: 7}, Field: "stages[0].id", Msg: "bad"}, "f.yaml:3:7: stages[0].id: bad"},
		{Error{Pos: Pos{File: "f.yaml", Line: 3}, Msg: "bad"}, "f.yaml:3: bad"},
		{Error{Pos: Pos{File: "f.yaml"}, Field: "id", Msg: "bad"}, "f.yaml: id: bad"},
		{Error{Pos: Pos{Line: 3, Col: 7}, Field: "id", Msg: "bad"}, "3:7: id: bad"},
		{Error{Field: "id", Msg: "bad"}, "id: bad"},
		{Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	list := ErrorList{{Msg: "a"}, {Msg: "b"}}
	if got := list.Error(); got != "a\nb" {
		t.Errorf("ErrorList.Error() = %q", got)
	}
	if ErrorList(nil).Err() != nil {
		t.Error("empty ErrorList.Err() != nil")
	}
	var e *Error
	if !errors.As(list.Err(), &e) || e.Msg != "a" {
		t.Errorf("errors.As(*Error) = %v", e)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"promt", "prompt"},
		{"prompts", "prompt"},
		{"adaptr", "adapter"},
		{"extra_args", "extraArgs"},
		{"pending_inputs", "pendingInputs"},
		{"keep_alive", "keepAlive"},
		{"ENV", "env"},
		{"timout", "timeout"},
		{"ix", "id"},
		{"x", ""},
		{"model", ""},
		{"", ""},
		{strings.Repeat("z", 10000), ""},
	}
	for _, tt := range tests {
		if got := suggest.Closest(tt.in, taskKeys); got != tt.want {
			t.Errorf("suggest.Closest(%.20q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
