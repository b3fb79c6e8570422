package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// chooseAdapter makes the tui adapter draw its menus as Claude Code 2.1.331
// does (unnumbered, "No" selected first, a kitty keyboard query before its
// redraws) and answer the trust menu by label.
func chooseAdapter(p *project, label string) {
	ad := p.read(".vibeteam/adapters/tui.yaml")
	ad = strings.Replace(ad, "args: [", "args: [-menu-first, -unnumbered, ", 1)
	ad = strings.Replace(ad, "use: 'select:1'", "choose: "+quoteYAML(label), 1)
	p.write(".vibeteam/adapters/tui.yaml", ad)
	p.write("wf.yaml", "id: choose\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"hello\"], timeout: 60s }\n")
}

func quoteYAML(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// The option is found by its label, the selection moved to it with an
// arrow key and checked on the screen, and only then Enter pressed: the
// menu gets exactly one answer, Yes, although digits do nothing and No
// comes first. The TUI redraws its selection after a kitty keyboard query,
// which must not move the virtual terminal's cursor, or the check would
// read a stale "❯ No, exit" and never press Enter.
func TestChooseByLabel(t *testing.T) {
	p := newProject(t)
	cpuHog(t)
	chooseAdapter(p, "Yes, I trust this folder")
	r := p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms")
	wantCode(t, r, 0)
	if got := p.read("rec.txt"); got != "menu:1\nline:hello\n" {
		t.Errorf("the TUI received %q; want Yes chosen once, then the input", got)
	}
	s := p.only()
	var acts []map[string]any
	for _, e := range p.events(s.ID) {
		if e.Kind() == "auto_action" {
			acts = append(acts, e.Fields())
		}
	}
	if len(acts) != 1 {
		t.Fatalf("%d auto actions, want 1: %v", len(acts), acts)
	}
	if acts[0]["keys"] != "\x1b[B\r" || acts[0]["choose"] != "Yes, I trust this folder" {
		t.Errorf("auto action %v: want Down then Enter, choosing the label", acts[0])
	}
}

// A label that is not on the screen is never guessed at: no key is sent,
// and without a terminal the session parks, saying which option was
// missing.
func TestChooseMissingLabelParks(t *testing.T) {
	p := newProject(t)
	chooseAdapter(p, "Trust and continue")
	r := p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms")
	wantCode(t, r, 3)
	if got, err := os.ReadFile(p.path("rec.txt")); err == nil && len(got) > 0 {
		t.Errorf("the TUI received %q; want nothing", got)
	}
	s := p.only()
	if s.TaskStatus["a"] != state.TaskWaitingForUser {
		t.Errorf("task %s, want WAITING_FOR_USER", s.TaskStatus["a"])
	}
	var why string
	for _, e := range p.events(s.ID) {
		if e.Kind() == "interaction" {
			why, _ = e.Fields()["why"].(string)
		}
	}
	if !strings.Contains(why, `"Trust and continue"`) || !strings.Contains(why, "not on the screen") {
		t.Errorf("interaction why=%q: want it to name the missing option", why)
	}
	if autoActions(p, s.ID) != 0 {
		t.Errorf("an auto action was recorded for a missing option")
	}
}

// A handler sees the whole dialog, not only the text below the state's
// match: here the state matches the menu's last line, and the handler
// recognises the dialog by its question, above it, and the options it
// chooses from are above the match too.
func TestHandlerSeesTheWholeDialog(t *testing.T) {
	p := newProject(t)
	chooseAdapter(p, "Yes, I trust this folder")
	ad := p.read(".vibeteam/adapters/tui.yaml")
	ad = strings.Replace(ad, "{ name: interaction_trust, pattern: 'Do you trust the files' }", "{ name: interaction_trust, pattern: 'Enter to confirm' }", 1)
	p.write(".vibeteam/adapters/tui.yaml", ad)
	r := p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms")
	wantCode(t, r, 0)
	if got := p.read("rec.txt"); got != "menu:1\nline:hello\n" {
		t.Errorf("the TUI received %q; want Yes chosen once, then the input", got)
	}
}

// A screen that matches none of the adapter's states and stops changing (a
// dialog the adapter does not know, as a newer CLI draws) is never typed
// into: after 3 × stuckAfter the session parks, naming the CLI's version
// and whether the adapter was tested with it.
func TestUnknownScreenParksNamingTheVersion(t *testing.T) {
	p := newProject(t)
	ad := p.read(".vibeteam/adapters/tui.yaml")
	ad = strings.Replace(ad, "args: [", "args: [-menu-first, -unnumbered, ", 1)
	ad = strings.Replace(ad, "'Do you trust the files'", "'Never drawn'", -1)
	ad = strings.Replace(ad, "quietPeriod: 100ms", "quietPeriod: 100ms\nstuckAfter: 500ms\nversion: { tested: \"1.2.0\", args: [-version] }", 1)
	p.write(".vibeteam/adapters/tui.yaml", ad)
	p.write("wf.yaml", "id: unknown\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, pendingInputs: [\"hello\"], timeout: 60s }\n")
	r := p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms")
	wantCode(t, r, 3)
	if got, err := os.ReadFile(p.path("rec.txt")); err == nil && len(got) > 0 {
		t.Errorf("the TUI received %q; want nothing", got)
	}
	s := p.only()
	if s.TaskStatus["a"] != state.TaskWaitingForUser {
		t.Errorf("task %s, want WAITING_FOR_USER", s.TaskStatus["a"])
	}
	want := "the screen matches none of the tui adapter's states and has not changed for 1.5s (tui: faketui 1.2.3, newer than the tested 1.2.0)"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
	}
	if !strings.Contains(r.stderr, "No, exit") {
		t.Errorf("stderr does not show the screen:\n%s", r.stderr)
	}
}

// A blank screen asks nothing: a TUI that draws nothing for a while (opencode
// on a loaded machine took over 45 s for its first frame) is not an unknown
// question after 3 × stuckAfter. It gets 12 × stuckAfter, then a person is
// told the CLI drew nothing.
func TestBlankScreenIsNotAQuestion(t *testing.T) {
	for _, c := range []struct {
		name, blank, stuck string
		code               int
	}{
		// Blank for 1 s: past 3 × 200 ms, well within 12 × 200 ms.
		{"slow first frame", "1s", "200ms", 0},
		// Blank for ever: parked after 12 × 50 ms, saying why.
		{"never drawn", "1h", "50ms", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t)
			ad := p.read(".vibeteam/adapters/tui.yaml")
			ad = strings.Replace(ad, "args: [", "args: [-blank, "+c.blank+", ", 1)
			ad = strings.Replace(ad, "quietPeriod: 100ms", "quietPeriod: 100ms\nstuckAfter: "+c.stuck, 1)
			p.write(".vibeteam/adapters/tui.yaml", ad)
			p.write("wf.yaml", "id: blank\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: tui, prompt: hello, timeout: 60s }\n")
			r := p.run("run", "wf.yaml", "--auto-approve", "--grace", "300ms")
			wantCode(t, r, c.code)
			s := p.only()
			if c.code == 0 {
				if got := p.read("rec.txt"); !strings.Contains(got, "hello") {
					t.Errorf("the TUI received %q; want the prompt", got)
				}
				return
			}
			if s.TaskStatus["a"] != state.TaskWaitingForUser {
				t.Errorf("task %s, want WAITING_FOR_USER", s.TaskStatus["a"])
			}
			if want := "the tui CLI has drawn nothing: the screen stayed blank for 600ms"; !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
			}
		})
	}
}
