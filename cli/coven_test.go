package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// copyTree copies the files under src into the project.
func (p *project) copyTree(src string) {
	p.t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		p.write(rel, string(data))
		return nil
	})
	if err != nil {
		p.t.Fatal(err)
	}
}

// A grimoire and spells written as coven users write them, in .coven/:
// preview passes and lists the optional output, and a run with a fake agent
// completes, with coven's names and functions rendered.
func TestCovenStyleGrimoire(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.copyTree("../testdata/coven")
	p.write(".vibeteam/adapters/agent.yaml", "name: agent\ncommand: "+fakeAgent+"\nmodes:\n  headless:\n    args: []\n    prompt: { position: arg }\n")

	// No name: coven's grimoire-matchers.yaml chooses by the bead's tags.
	r := p.exec("preview", "--bead-file", "bead.json")
	wantCode(t, r, 0)
	for _, want := range []string{
		"bead bd-5wf: grimoire coven-style (.coven/grimoire-matchers.yaml:3 matchers[0])",
		"# Implement: Add greeting", "Say hello", "Type: feature, assignee: nobody",
		"write=implemented.txt:FEATURE-implement-coven-style",
		"optional (empty, with a warning, when the agent does not report it): .findings.outputs.issues",
	} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("preview lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}

	r = p.exec("run", "--bead-file", "bead.json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "grimoire coven-style (.coven/grimoire-matchers.yaml:3 matchers[0])") {
		t.Errorf("run does not say the matcher chose:\n%s", r.stderr)
	}
	s := p.only()
	if s.Status != state.StatusCompleted {
		t.Fatalf("status %s: %s", s.Status, r.stderr)
	}
	wt := filepath.Join(".worktrees", "bd-5wf")
	if got := p.read(filepath.Join(wt, "implemented.txt")); got != "FEATURE-implement-coven-style" {
		t.Errorf("implemented.txt = %q", got)
	}
	if got := p.read(filepath.Join(wt, "fixed.txt")); got != "issues=none" {
		t.Errorf("fixed.txt = %q", got)
	}
	var report string
	for _, e := range p.stepEvents(s.ID) {
		if e.Fields()["name"] == "report" {
			report, _ = e.Fields()["output"].(string)
		}
	}
	if want := "ADD GREETING|Say hello|no design|ui,greeting|coven-style|success"; report != want {
		t.Errorf("report printed %q, want %q", report, want)
	}
	warned := false
	for _, e := range p.events(s.ID) {
		if e.Kind() == events.TemplateWarned && strings.Contains(e.Fields()["warning"].(string), `.findings.outputs.issues is empty: the agent did not report "issues"`) {
			warned = true
		}
	}
	if !warned {
		t.Error("no template.warned event for the output the agent did not report")
	}
}

// validate parses a stage task's prompt with the template functions, as
// run renders it.
func TestStagePromptFunctionsValidate(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("wf.yaml", "id: g\ngoal: ship it\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: '{{.goal | upper}} {{.who | default \"nobody\"}}' }\n")
	r := p.exec("validate", "wf.yaml", "--set", "who=")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "wf.yaml: ok") {
		t.Errorf("validate:\n%s\n%s", r.stdout, r.stderr)
	}
}
