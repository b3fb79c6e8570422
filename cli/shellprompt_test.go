package cli

import (
	"strings"
	"testing"
)

// TestShellTaskPromptQuotesValues: the shell adapter runs a stage task's
// prompt as a command line; a --set value or a bead's text in it is data,
// quoted where it lands, and never runs.
func TestShellTaskPromptQuotesValues(t *testing.T) {
	t.Parallel()
	hostile := `x"; touch PWN; echo "'$(touch PWN2)` + "`touch PWN3`"
	p := newProject(t)
	p.write("wf.yaml", `id: q
stages:
  - id: s
    tasks:
      - { id: word, adapter: shell, executionMode: headless, prompt: "printf '%s' {{.v}} > word.txt" }
      - { id: dq, adapter: shell, executionMode: headless, prompt: "printf '%s' \"<{{.v}}>\" > dq.txt" }
`)
	r := p.exec("run", "wf.yaml", "--set", "v="+hostile)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if got := p.read("word.txt"); got != hostile {
		t.Errorf("word.txt = %q, want %q", got, hostile)
	}
	if got := p.read("dq.txt"); got != "<"+hostile+">" {
		t.Errorf("dq.txt = %q", got)
	}
	for _, f := range []string{"PWN", "PWN2", "PWN3"} {
		if p.exists(f) {
			t.Errorf("%s: the value ran as code", f)
		}
	}

	// A grimoire's stage task on a bead titled to break out.
	b := newBeadProject(t)
	b.write("bead.json", `{"id":"bd-1","title":"x\"; touch PWNED; echo \"","status":"open"}`)
	b.write(".vibeteam/grimoires/st.yaml", `name: st
steps:
  - name: par
    type: stage
    tasks:
      - { id: echo, adapter: shell, executionMode: headless, prompt: "echo \"title: {{.bead.title}}\" > title.txt" }
`)
	r = b.exec("run", "st", "--bead-file", "bead.json")
	if r.code != 0 {
		t.Fatalf("grimoire: exit %d\n%s", r.code, r.stderr)
	}
	if b.exists(".worktrees/bd-1/PWNED") || b.exists("PWNED") {
		t.Error("the bead's title ran as code")
	}
	if got := b.read(".worktrees/bd-1/title.txt"); got != "title: x\"; touch PWNED; echo \"\n" {
		t.Errorf("title.txt = %q", got)
	}

	// A value where no quoting is safe is refused before anything runs.
	p.write("bad.yaml", `id: bad
stages:
  - id: s
    tasks:
      - { id: sub, adapter: shell, executionMode: headless, prompt: "echo $({{.v}})" }
`)
	r = p.exec("validate", "bad.yaml", "--set", "v=ls")
	if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "bad.yaml:") {
		t.Errorf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
