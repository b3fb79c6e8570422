package cli

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// previewGrimoire uses a spell of the project, an input, an output alias, a
// loop with a condition and results only a run knows.
const previewGrimoire = `name: fix-until-green
description: Run the tests; while they fail, an agent fixes them
steps:
  - name: tests
    type: script
    command: go test {{.pkg}} 2>&1
    on_fail: continue
    output: test_run
  - name: quality
    type: loop
    max_iterations: 3
    steps:
      - name: fix
        type: agent
        adapter: fake
        spell: fix
        input:
          failures: "{{.loop_entry.output}}"
      - name: retest
        type: script
        command: go test {{.pkg}}
        on_fail: continue
        on_success: exit_loop
      - name: note
        type: script
        when: "{{.retest.failed}}"
        command: "echo {{.quality.iteration}}: {{.fix.outputs.cause}}"
  - name: report
    type: script
    command: echo {{.test_run.exit_code}}
`

const previewSpell = `Fix the tests of {{.bead.title}}.
They said:
{{.failures}}
{{if .test_run.failed}}They exited with {{.test_run.exit_code}}.{{end}}
`

func TestPreviewGrimoire(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("fix.yaml", previewGrimoire)
	p.write(".vibeteam/spells/fix.md", previewSpell)
	p.write("bead.json", `[{"id": "bd-7", "title": "the parser"}]`)
	r := p.exec("preview", "fix.yaml", "--set", "pkg=./parser/...", "--bead-file", "bead.json")
	wantCode(t, r, 0)
	for _, want := range []string{
		"grimoire fix-until-green, from fix.yaml\n",
		"  variables: pkg=./parser/...\n",
		"  bead: bd-7 the parser\n",
		// The tree: file:line, type, name, details; a loop's steps indented.
		"fix.yaml:4  script tests (output test_run, on_fail continue)\n    $ go test './parser/...' 2>&1\n",
		"fix.yaml:9  loop quality (at most 3 iterations, then block)\n",
		"    fix.yaml:13  agent fix (fake, headless)\n",
		"        input failures: ⟨loop_entry.output⟩\n",
		// The spell rendered: what is known, and placeholders.
		"        spell fix (.vibeteam/spells/fix.md):\n" +
			"        │ Fix the tests of the parser.\n" +
			"        │ They said:\n" +
			"        │ ⟨loop_entry.output⟩\n" +
			"        │ ⟨if .test_run.failed⟩They exited with ⟨test_run.exit_code⟩.⟨end⟩\n",
		"    fix.yaml:19  script retest (on_fail continue, on_success exit_loop)\n",
		"    fix.yaml:24  script note\n        when {{.retest.failed}}  (decided when it runs)\n" +
			"        $ echo '⟨quality.iteration⟩': '⟨fix.outputs.cause⟩'\n",
		"fix.yaml:28  script report\n    $ echo '⟨test_run.exit_code⟩'\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}

	// --full shows the prompt the agent would get, system prompt included.
	r = p.exec("preview", "fix.yaml", "--set", "pkg=x", "--bead-file", "bead.json", "--full")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "## How to finish") || !strings.Contains(r.stdout, "│ Fix the tests of the parser.") {
		t.Errorf("--full:\n%s", r.stdout)
	}
}

// A preview starts no process and writes nothing: not the script's touch,
// not the agent's command, not git (to find the base dir), not a session
// in .vibeteam/.
func TestPreviewRunsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := t.TempDir()
	marks := t.TempDir()
	// Spies on PATH: each notes that it ran.
	for _, name := range []string{"agentcli", "git", "touch", "sh", "bd"} {
		spy := "#!/bin/sh\n: > '" + filepath.Join(marks, name) + "'\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(spy), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".vibeteam/adapters/spy.yaml", "name: spy\ncommand: agentcli\nmodes:\n  headless:\n    args: [--write, agent-was-here]\n    prompt: { position: arg }\n")
	write("g.yaml", `name: g
steps:
  - name: mark
    type: script
    command: touch script-was-here; /bin/sh -c 'echo x > script-was-here-too'
  - name: ask
    type: agent
    adapter: spy
    spell: |
      Write {{.mark.output}} to agent-was-here.
  - name: again
    type: loop
    steps:
      - name: more
        type: script
        command: touch {{.ask.outputs.file}}
        on_success: exit_loop
`)
	listing := func() []string {
		var out []string
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, path+" "+info.Mode().String()+" "+info.ModTime().String())
			return nil
		})
		return out
	}
	before := listing()
	// No --base-dir: the base dir is found without git.
	cmd := exec.Command(vibeteam, "preview", "g.yaml")
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "VIBETEAM_BASE_DIR=") || strings.HasPrefix(e, "PATH=")
	})
	cmd.Env = append(cmd.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	for _, want := range []string{
		"$ touch script-was-here; /bin/sh -c 'echo x > script-was-here-too'\n",
		"│ Write ⟨mark.output⟩ to agent-was-here.\n",
		"$ touch '⟨ask.outputs.file⟩'\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if after := listing(); !slices.Equal(before, after) {
		t.Errorf("files changed:\nbefore %q\nafter  %q", before, after)
	}
	if entries, _ := os.ReadDir(marks); len(entries) > 0 {
		var ran []string
		for _, e := range entries {
			ran = append(ran, e.Name())
		}
		t.Errorf("processes ran: %v", ran)
	}
}

func TestPreviewInvalidGrimoire(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	// Structure: what loading finds, with file:line:col.
	p.write("bad.yaml", "name: bad\nsteps:\n  - name: a\n    type: scritp\n    command: echo\n")
	r := p.exec("preview", "bad.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "bad.yaml:4:11: ") || !strings.Contains(r.stderr, `did you mean "script"?`) || r.stdout != "" {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}

	// Templates: every problem, each at the line of its field.
	p.write("refs.yaml", `name: refs
steps:
  - name: first
    type: script
    command: echo {{.previous.output}}
  - name: second
    type: script
    command: echo {{.later.output}} {{.first.outptu}} {{.nope}}
  - name: later
    type: script
    when: "{{.first.failed}}"
    command: echo {{.first.outputs.anything}}
`)
	r = p.exec("preview", "refs.yaml")
	wantCode(t, r, 2)
	for _, want := range []string{
		`refs.yaml:5:14: step "first": command: .previous is undefined: no step has run before this one` + "\n",
		`refs.yaml:8:14: step "second": command: step "later" has not run yet at this point (it is at line 9)` + "\n",
		`refs.yaml:8:14: step "second": command: no key "outptu" in .first (did you mean output?)` + "\n",
		`refs.yaml:8:14: step "second": command: no step or variable "nope" (a step is there once it has finished; a variable is set with --set nope=...)` + "\n",
		"vibeteam: refs.yaml: 4 errors; nothing was run\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// The rest is still shown.
	if !strings.Contains(r.stdout, "$ echo '⟨first.outputs.anything⟩'") || !strings.Contains(r.stdout, "$ (not rendered: see the errors below)") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	// A --set variable is a known name.
	p.write("refs.yaml", "name: refs\nsteps:\n  - name: a\n    type: script\n    command: echo {{.nope}}\n")
	wantCode(t, p.exec("preview", "refs.yaml", "--set", "nope=1"), 0)
}

func TestPreviewBead(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: g
steps:
  - name: work
    type: agent
    adapter: fake
    spell: |
      Work on {{.bead.id}}: {{.bead.titel}}
`)
	p.write("array.json", `[{"id": "bd-1", "title": "Fix it"}]`)
	p.write("object.json", `{"id": "bd-2", "title": "Fix that"}`)
	for _, f := range []string{"array.json", "object.json"} {
		r := p.exec("preview", "g.yaml", "--bead-file", f)
		wantCode(t, r, 2)
		if want := `g.yaml:6:12: step "work": inline spell: line 1: no key "titel" in .bead (did you mean title?)`; !strings.Contains(r.stderr, want) {
			t.Errorf("%s: stderr lacks %q:\n%s", f, want, r.stderr)
		}
	}
	p.write("g.yaml", strings.Replace(p.read("g.yaml"), "titel", "title", 1))
	r := p.exec("preview", "g.yaml", "--bead-file", "object.json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "│ Work on bd-2: Fix that\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	// Without a bead, a key of it is a placeholder and a warning: the
	// grimoire is fine, the run would need a bead.
	r = p.exec("preview", "g.yaml")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "│ Work on ⟨bead.id⟩: ⟨bead.title⟩\n") || !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "no bead is given") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	// A bead file that cannot be read is a usage error naming it.
	p.write("broken.json", `{"id": `)
	r = p.exec("preview", "g.yaml", "--bead-file", "broken.json")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "bead file broken.json: not valid JSON") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestPreviewUnknownSpell(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write(".vibeteam/spells/review-code.md", "Review {{include \"missing-part\"}}")
	p.write("g.yaml", "name: g\nsteps:\n  - name: a\n    type: agent\n    adapter: fake\n    spell: reveiw-code\n")
	r := p.exec("preview", "g.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "g.yaml:6:12: ") || !strings.Contains(r.stderr, `spell "reveiw-code" not found`) || !strings.Contains(r.stderr, `did you mean "review-code"?`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	p.write("g.yaml", strings.Replace(p.read("g.yaml"), "reveiw-code", "review-code", 1))
	r = p.exec("preview", "g.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `partial "missing-part" not found`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestPreviewBuiltin(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	r := p.exec("preview", "script-demo")
	wantCode(t, r, 0)
	for _, want := range []string{
		"grimoire script-demo, from built-in script-demo\n",
		"builtin:script-demo.yaml:7  script prepare (timeout 30s)\n",
		"builtin:script-demo.yaml:11  loop retry (at most 5 iterations, then block)\n",
		"    builtin:script-demo.yaml:16  script attempt (output attempts)\n",
		"        when {{.previous.failed}}  (decided when it runs)\n",
		"    $ echo passed after '⟨attempts.output⟩' attempts\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if p.exists(".vibeteam/script-demo") || p.exists(".vibeteam/sessions") {
		t.Error("the preview ran the demo")
	}

	// A stage workflow: its stages and tasks, the prompts rendered.
	r = p.exec("preview", "demo")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "workflow demo, from built-in demo\n") || !strings.Contains(r.stdout, `│ echo "planning: show stages of parallel tasks"`) {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if p.exists(".vibeteam/demo") {
		t.Error("the preview ran the demo")
	}

	// A name that is nothing lists what there is.
	r = p.exec("preview", "script-dmeo")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `did you mean "script-demo"?`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestPreviewHelpAndCompletion(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	r := p.exec("preview", "--help")
	wantCode(t, r, 0)
	for _, want := range []string{"NAME|FILE", "no file or directory is", "⟨tests.output⟩", "--bead-file", "--set", "--base-dir", "--full"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := p.exec("help"); !strings.Contains(r.stdout, "preview") {
		t.Errorf("help does not list preview:\n%s", r.stdout)
	}
	out, err := exec.Command(vibeteam, "__complete", "pre").Output()
	if err != nil || !strings.HasPrefix(string(out), "preview\t") {
		t.Errorf("completion of pre: %q, %v", out, err)
	}
	wantCode(t, p.exec("preview"), 2)
}

func TestReadBeadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct{ name, content, want, err string }{
		{"object.json", `{"id": "bd-1", "title": "T", "priority": 2}`, "bd-1", ""},
		{"array.json", `[{"id": "bd-2"}]`, "bd-2", ""},
		{"spaced.json", "\n  [ {\"id\": \"bd-3\"} ]\n", "bd-3", ""},
		{"empty.json", "  \n", "", "bead file DIR/empty.json: is empty; want a JSON object"},
		{"two.json", `[{"id": "a"}, {"id": "b"}]`, "", "bead file DIR/two.json: is an array of 2 beads; want one"},
		{"none.json", `[]`, "", "bead file DIR/none.json: is an empty array; want one bead"},
		{"strings.json", `["a"]`, "", "bead file DIR/strings.json: the array holds a string, not an object"},
		{"number.json", `42`, "", "bead file DIR/number.json: is a number, not an object"},
		{"null.json", `null`, "", "bead file DIR/null.json: is null, not an object"},
		{"bad.json", "{\n  \"id\": x\n}", "", "bead file DIR/bad.json: not valid JSON: line 2, column 9: invalid character 'x'"},
		{"short.json", `{"id": "a"`, "", "bead file DIR/short.json: not valid JSON: it ends too early"},
		{"twice.json", `{"id": "a"} {"id": "b"}`, "", "bead file DIR/twice.json: holds more than one JSON value"},
	} {
		path := filepath.Join(dir, tt.name)
		if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		bead, err := readBeadFile(path)
		if tt.err != "" {
			want := strings.ReplaceAll(tt.err, "DIR", dir)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s: error %v, want %q", tt.name, err, want)
			}
			continue
		}
		if err != nil || bead["id"] != tt.want {
			t.Errorf("%s: %v, %v", tt.name, bead, err)
		}
	}
	if _, err := readBeadFile(filepath.Join(dir, "missing.json")); err == nil || err.Error() != "bead file "+filepath.Join(dir, "missing.json")+": no such file" {
		t.Errorf("missing file: %v", err)
	}
	if _, err := readBeadFile(dir); err == nil || !strings.Contains(err.Error(), "bead file "+dir+": is a directory") {
		t.Errorf("directory: %v", err)
	}
}

// TestPreviewRendersAsRun: what preview shows is what run renders. A stage
// task run by the shell adapter is a command line, its values quoted where
// they land; the old preview rendered it as plain text, so it showed a
// value that run quotes as if it were code.
func TestPreviewRendersAsRun(t *testing.T) {
	t.Parallel()
	const v = "a b; touch PWN"
	p := newProject(t)
	p.write("g.yaml", `name: g
steps:
  - name: both
    type: stage
    tasks:
      - { id: say, adapter: shell, executionMode: headless, prompt: "echo {{.v}} > said.txt" }
`)
	p.write("wf.yaml", `id: w
stages:
  - id: s
    tasks:
      - { id: say, adapter: shell, executionMode: headless, prompt: "echo {{.v}} > said.txt" }
`)
	for _, f := range []string{"g.yaml", "wf.yaml"} {
		r := p.exec("preview", f, "--set", "v="+v)
		wantCode(t, r, 0)
		if want := "│ echo 'a b; touch PWN' > said.txt\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("preview %s: stdout lacks %q:\n%s", f, want, r.stdout)
		}
		r = p.exec("run", f, "--set", "v="+v)
		wantCode(t, r, 0)
		if got := p.read("said.txt"); got != v+"\n" || p.exists("PWN") {
			t.Errorf("run %s: said.txt = %q, PWN exists: %t", f, got, p.exists("PWN"))
		}
	}
}
