package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// `go build -o vibeteam .`, as the README says, leaves no untracked file.
func TestBuiltBinaryIsIgnored(t *testing.T) {
	t.Parallel()
	if err := exec.Command("git", "-C", "..", "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	out, err := exec.Command("git", "-C", "..", "check-ignore", "--no-index", "vibeteam").CombinedOutput()
	if err != nil || string(out) != "vibeteam\n" {
		t.Errorf("git check-ignore vibeteam: %q, %v: the binary would be untracked", out, err)
	}
}

// sessions shows a grimoire's step, not the STAGE 0/0 of a stage workflow.
func TestSessionsShowsAGrimoiresStep(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", "name: g\nsteps:\n  - name: first\n    type: script\n    command: echo one\n  - name: check-it\n    type: script\n    command: exit 1\n")
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 3)
	r = p.exec("sessions")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "step check-it") || strings.Contains(r.stdout, "0/0") {
		t.Errorf("sessions:\n%s", r.stdout)
	}
	r = p.exec("sessions", "--json")
	if !strings.Contains(r.stdout, `"step": "check-it"`) {
		t.Errorf("sessions --json:\n%s", r.stdout)
	}
}

// --help and help run mention grimoires and list the built-ins.
func TestHelpMentionsGrimoires(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, args := range [][]string{{"--help"}, {"help", "run"}, {"run", "--help"}} {
		r := p.exec(args...)
		wantCode(t, r, 0)
		for _, want := range []string{"grimoire", ".vibeteam/grimoires/", "implement-bead", "spec-to-beads", "prepare-pr", "demo"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("vibeteam %s does not mention %q:\n%s", strings.Join(args, " "), want, r.stdout)
			}
		}
	}
}
