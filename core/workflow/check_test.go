package workflow

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// registry is a fake adapter registry that knows what the real one knows:
// modes, what a launch needs, installed commands and broken files.
type registry struct {
	fake
	missing map[string]bool // adapters whose command is not installed
	looked  []string        // CheckCommand calls, as adapter@dir
}

func (registry) HasMode(adapter, mode string) bool    { return true }
func (registry) TakesQueue(adapter, mode string) bool { return true }

func (registry) CheckLaunch(adapter, mode, prompt string, extraArgs []string) error {
	switch {
	case adapter == "shell" && prompt == "":
		return errors.New(`adapter "shell" needs a prompt in ` + mode + " mode")
	case strings.HasPrefix(prompt, "-"):
		return errors.New("starts with a dash: " + prompt)
	}
	return nil
}

func (r *registry) CheckCommand(adapter, dir string) error {
	r.looked = append(r.looked, adapter+"@"+dir)
	if r.missing[adapter] {
		return errors.New(adapter + " is not installed")
	}
	return nil
}

func (registry) Broken(adapter string) error {
	if adapter == "aider" {
		return errors.New("aider.yaml:3:1: bogus: unknown key\naider.yaml:4:1: other")
	}
	return nil
}

func TestRunChecks(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := func(r *registry) LoadOptions {
		return LoadOptions{Adapters: r, Vars: map[string]string{"target": "web"}, BaseDir: base, Commands: CheckError}
	}
	tests := []struct {
		name string
		task string
		opts func(*registry) LoadOptions
		want []string
	}{
		{name: "all good", task: "        adapter: claude\n        prompt: fix {{.target}} for {{.goal}}\n        cwd: sub\n"},
		{name: "a mode that needs a prompt", task: "        adapter: shell\n",
			want: []string{`wf.yaml:5:9: stages[0].tasks[0].prompt: adapter "shell" needs a prompt in interactive mode`}},
		{name: "a missing variable", task: "        adapter: claude\n        prompt: fix {{.where}}\n",
			want: []string{`wf.yaml:7:17: stages[0].tasks[0].prompt: missing variable "where" (set it with --set where=...)`}},
		{name: "the launch check sees the rendered prompt", task: "        adapter: claude\n        prompt: \"-{{.target}}\"\n",
			want: []string{`wf.yaml:7:17: stages[0].tasks[0].prompt: starts with a dash: -web`}},
		{name: "without vars only the syntax", task: "        adapter: claude\n        prompt: \"-{{.where}}\"\n",
			opts: func(r *registry) LoadOptions { return LoadOptions{Adapters: r} }},
		{name: "a headless task without prompt is one error", task: "        adapter: shell\n        executionMode: headless\n",
			want: []string{`wf.yaml:5:9: stages[0].tasks[0].prompt: a headless task needs a prompt`}},
		{name: "a typo in the mode is one error", task: "        adapter: shell\n        executionMode: Interactiv\n",
			want: []string{`wf.yaml:7:24: stages[0].tasks[0].executionMode: must be "interactive", "headless" or "acp", got "Interactiv" (did you mean "interactive"?)`}},
		{name: "a missing cwd", task: "        adapter: claude\n        cwd: nowhere\n",
			want: []string{`wf.yaml:7:14: stages[0].tasks[0].cwd: directory ` + filepath.Join(base, "nowhere") + ` does not exist (cwd is relative to the base directory ` + base + `)`}},
		{name: "a cwd that is a file", task: "        adapter: claude\n        cwd: " + filepath.Join(base, "file") + "\n",
			want: []string{`wf.yaml:7:14: stages[0].tasks[0].cwd: ` + filepath.Join(base, "file") + ` is not a directory`}},
		{name: "no base dir, no cwd check", task: "        adapter: claude\n        cwd: nowhere\n",
			opts: func(r *registry) LoadOptions { return LoadOptions{Adapters: r} }},
		{name: "a command not installed", task: "        adapter: codex\n",
			want: []string{`wf.yaml:6:18: stages[0].tasks[0].adapter: codex is not installed`}},
		{name: "a command not installed, as a warning", task: "        adapter: codex\n",
			opts: func(r *registry) LoadOptions { o := opts(r); o.Commands = CheckWarn; return o },
			want: []string{`wf.yaml:6:18: warning: stages[0].tasks[0].adapter: codex is not installed`}},
		{name: "a broken adapter file", task: "        adapter: aider\n",
			want: []string{`wf.yaml:6:18: stages[0].tasks[0].adapter: adapter "aider" cannot be used: its file is broken: aider.yaml:3:1: bogus: unknown key (vibeteam adapters lists every problem)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &registry{missing: map[string]bool{"codex": true}}
			o := opts(r)
			if tt.opts != nil {
				o = tt.opts(r)
			}
			def, probs := Diagnose([]byte("id: wf\nstages:\n  - id: s\n    tasks:\n      - id: a\n"+tt.task), "wf.yaml", o)
			var got []string
			for _, p := range probs {
				got = append(got, p.Error())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got: %q\nwant: %q", got, tt.want)
			}
			if wantDef := !probs.HasErrors(); (def != nil) != wantDef {
				t.Errorf("definition %v with problems %q", def != nil, got)
			}
			_, err := Parse([]byte("id: wf\nstages:\n  - id: s\n    tasks:\n      - id: a\n"+tt.task), "wf.yaml", o)
			if (err != nil) != probs.HasErrors() {
				t.Errorf("Parse = %v; warnings alone must not fail it", err)
			}
		})
	}
}

// Ten tasks of an agent that is not installed are one problem.
func TestMissingCommandReportedOncePerAdapter(t *testing.T) {
	r := &registry{missing: map[string]bool{"codex": true}}
	src := "id: wf\nstages:\n  - id: s\n    tasks:\n" +
		"      - { id: a, adapter: codex }\n      - { id: b, adapter: codex }\n      - { id: c, adapter: claude }\n"
	_, probs := Diagnose([]byte(src), "wf.yaml", LoadOptions{Adapters: r, BaseDir: t.TempDir(), Commands: CheckWarn})
	if len(probs) != 1 || !probs[0].Warning || probs[0].Pos.Line != 5 {
		t.Errorf("problems: %v", probs)
	}
	if len(r.looked) != 2 {
		t.Errorf("looked up %v", r.looked)
	}
}

func TestDiagnoseFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	_, probs := DiagnoseFile(dir, defaultOpts())
	if len(probs) != 1 || probs[0].Pos.File != dir || probs[0].Msg != "is a directory, not a regular file" {
		t.Errorf("DiagnoseFile(dir) = %v", probs)
	}
}

func TestTopLevelKeys(t *testing.T) {
	for _, c := range []struct {
		file, src string
		want      []string
	}{
		{"a.yaml", "command: x\nmodes: {}\n", []string{"command", "modes"}},
		{"w.json", `{"id": "x", "stages": []}`, []string{"id", "stages"}},
		{"l.yaml", "- a\n", nil},
		{"bad.yaml", "a: [\n", nil},
	} {
		if got := TopLevelKeys([]byte(c.src), c.file); !slices.Equal(got, c.want) {
			t.Errorf("TopLevelKeys(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}

// The JSON Schema of workflow files (schema/workflow.schema.json, for
// editors) names exactly the keys the loader accepts.
func TestSchemaHasTheLoadersKeys(t *testing.T) {
	data, err := os.ReadFile("../../schema/workflow.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type props struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var s struct {
		props
		Definitions struct {
			Stage props `json:"stage"`
			Task  props `json:"task"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what   string
		schema map[string]json.RawMessage
		keys   []string
	}{{"root", s.Properties, rootKeys}, {"stage", s.Definitions.Stage.Properties, stageKeys}, {"task", s.Definitions.Task.Properties, taskKeys}} {
		var got []string
		for k := range c.schema {
			got = append(got, k)
		}
		sort.Strings(got)
		want := slices.Clone(c.keys)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s keys: schema has %q, the loader %q", c.what, got, want)
		}
	}
}
