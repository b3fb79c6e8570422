package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// readmeAdapters returns the adapter files the README shows, by name: the
// yaml blocks that start with "# .vibeteam/adapters/NAME.yaml".
func readmeAdapters(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n# \\.vibeteam/adapters/([A-Za-z0-9_-]+)\\.yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	out := map[string]string{}
	for _, m := range blocks {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatal("the README shows no adapter file")
	}
	return out
}

// The README's adapter examples work as written: only the command is
// swapped for a program that behaves as the example describes (asks a
// question the states name, then shows the idle prompt).
func TestReadmeAdapterExamples(t *testing.T) {
	for name, body := range readmeAdapters(t) {
		t.Run(name, func(t *testing.T) {
			p := newProject(t)
			cmd := regexp.MustCompile(`(?m)^command: .*$`)
			if !cmd.MatchString(body) {
				t.Fatalf("example %s has no command line", name)
			}
			p.write(".vibeteam/adapters/"+name+".yaml", cmd.ReplaceAllString(body, "command: "+fakeLine))
			env := `{ FAKELINE_ASKS: "1", FAKELINE_RECORD: rec.txt, FAKELINE_QUESTION: "Apply edit to main.py? (Y)es/(N)o [Yes]: " }`
			p.write("wf.yaml", "id: readme\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: "+name+", prompt: \"--fix the bug\", env: "+env+", timeout: 60s }\n")

			wantCode(t, p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms"), 0)
			if got := p.read("rec.txt"); got != "answer:y\n" {
				t.Errorf("the program received %q, want one yes", got)
			}
			s := p.only()
			if s.TaskStatus["a"] != state.TaskDone {
				t.Errorf("task %s (%s)", s.TaskStatus["a"], s.Tasks["a"].Error)
			}
			if argv := s.Tasks["a"].Argv; argv[len(argv)-1] == "--fix the bug" {
				t.Errorf("the prompt is a bare argument, readable as an option: %q", argv)
			}

			// Without --auto-approve and without a terminal, the question parks.
			_ = os.Remove(p.path("rec.txt"))
			wantCode(t, p.run("run", "wf.yaml", "--grace", "300ms"), 3)

			// And headless, as written.
			p.write("wf.yaml", strings.Replace(p.read("wf.yaml"), "id: a,", "id: a, executionMode: headless,", 1))
			wantCode(t, p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms"), 0)
		})
	}
}

// The README's grimoire runs as written, with the claude adapter replaced by
// the fake agent answering with a JSON block, in a Go module whose tests pass.
func TestReadmeGrimoireExample(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# \\.vibeteam/grimoires/([a-z-]+)\\.yaml\n.*?)```").FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("the README shows no grimoire")
	}
	p := newProject(t)
	p.write(".vibeteam/grimoires/"+m[2]+".yaml", m[1])
	p.write(".vibeteam/adapters/claude.yaml", "name: claude\ncommand: "+fakeAgent+"\nmodes:\n  headless: { args: [cat=answer.md], prompt: { position: arg } }\n")
	p.write("answer.md", "Done.\n```json\n{\"success\": true, \"summary\": \"added it\"}\n```\n")
	p.write("go.mod", "module example.com/x\n\ngo 1.21\n")
	p.write("x_test.go", "package x\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n")
	r := p.exec("run", m[2], "--set", "goal=add a flag")
	wantCode(t, r, 0)
	s := p.only()
	if s.Status != state.StatusCompleted || len(s.FailedSteps) != 0 {
		t.Fatalf("status %s, failed %v\n%s", s.Status, s.FailedSteps, r.stderr)
	}
	if got := s.Runs["2"].Output; got != "added it 1" {
		t.Errorf("report printed %q", got)
	}
}

// The README's first workflow validates with the command it shows, the
// agent CLIs standing in as the fake agent.
func TestReadmeFirstWorkflowValidates(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n# review\\.yaml\n(.*?)```\n\n    vibeteam (validate review\\.yaml[^\n]*)\n").FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("the README shows no review.yaml with its validate command")
	}
	p := newProject(t)
	p.write("review.yaml", m[1])
	for _, name := range []string{"claude", "codex"} {
		p.write(".vibeteam/adapters/"+name+".yaml", "name: "+name+"\ncommand: "+fakeAgent+"\nmodes:\n  headless: { prompt: { position: arg } }\n")
	}
	r := p.exec(strings.Fields(m[2])...)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "review.yaml: ok") {
		t.Errorf("vibeteam %s:\n%s%s", m[2], r.stdout, r.stderr)
	}
}
