package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// conflictGrimoire has each bead write its title to README (or, binary,
// to data.bin), then wait for go-ID in the project, then merge; onConflict
// is the merge step's on_conflict line ("" none).
const conflictGrimoire = `name: ship
steps:
  - name: work
    type: script
    command: %s
  - name: wait
    type: script
    command: test -f ../../go-{{.bead.id}}
  - name: merge
    type: merge
    require_review: false
%s`

// conflictProject is two beads that each change README's one line,
// each correct alone: bd-2 starts, bd-1 lands while bd-2 waits, then
// bd-2's merge conflicts. The resolving agent is the fake agent, its
// commands the spell fix-conflict (spell).
func conflictProject(t *testing.T, work, onConflict, spell string) (*beadProject, *state.Session) {
	t.Helper()
	p := newBeadProject(t, bead("bd-1", "Say one", nil), bead("bd-2", "Say two", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(conflictGrimoire, work, onConflict))
	p.write(".vibeteam/adapters/fixer.yaml", "name: fixer\ncommand: "+fakeAgent+"\nmodes:\n  headless:\n    args: []\n    prompt: { position: arg }\n")
	p.write(".vibeteam/spells/fix-conflict.md", spell)
	p.write("ok.md", "```json\n{\"success\": true}\n```\n")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "the project")
	r := p.bdExec("run", "ship", "--bead", "bd-2")
	wantCode(t, r, 3) // waits for go-bd-2
	p.write("go-bd-1", "")
	r = p.bdExec("run", "ship", "--bead", "bd-1")
	wantCode(t, r, 0)
	p.write("go-bd-2", "")
	for _, s := range p.sessions() {
		if s.Bead["id"] == "bd-2" {
			return p, s
		}
	}
	t.Fatal("no session of bd-2")
	return nil, nil
}

const fixerLong = "    on_conflict: {resolve: {adapter: fixer, spell: fix-conflict}}\n"

// resolverPrompts are the prompts the fake resolving agent was given,
// in order (it records its argv in resolver-N.json).
func resolverPrompts(p *beadProject) []string {
	var out []string
	for n := 1; ; n++ {
		data, err := os.ReadFile(p.path(fmt.Sprintf("resolver-%d.json", n)))
		if err != nil {
			return out
		}
		var rec struct{ Argv []string }
		_ = json.Unmarshal(data, &rec)
		out = append(out, strings.Join(rec.Argv, " "))
	}
}

// The second of two beads that change the same line resolves the
// conflict through the agent, and lands: both merges on main's first
// parent line, the bead closed, the session holding its merge commit.
func TestConflictResolvedByTheAgentLands(t *testing.T) {
	t.Parallel()
	spell := "record=../../resolver-{{.conflict.attempt}}.json write=README:Say_one,_say_two cat=../../ok.md\n" +
		"FILES {{range .conflict.files}}{{.}} {{end}}HUNKS {{.conflict.hunks}} OURS {{.conflict.ours}} THEIRS {{.conflict.theirs}} BEAD {{.bead.title}}\n"
	p, s := conflictProject(t, "echo {{.bead.title}} > README", fixerLong, spell)
	r := p.bdExec("resume", s.ID)
	wantCode(t, r, 0)
	s = p.sessionByID(s.ID)
	tip := p.git("rev-parse", "main")
	if s.Status != state.StatusCompleted || s.Merged != tip {
		t.Fatalf("status %s merged %q (main at %s)\n%s", s.Status, s.Merged, tip, r.stderr)
	}
	if got := p.git("show", "main:README"); got != "Say one, say two" {
		t.Errorf("main's README: %q", got)
	}
	firstParent := p.git("log", "--first-parent", "--format=%s", "main")
	if !strings.Contains(firstParent, "bd-1") || !strings.Contains(firstParent, "bd-2") || strings.Count(firstParent, "Merge ") != 2 {
		t.Errorf("main's first-parent history:\n%s", firstParent)
	}
	if calls := strings.Join(p.bdCalls(), "\n"); !strings.Contains(calls, "close bd-2") {
		t.Errorf("bd-2 was not closed:\n%s", calls)
	}
	prompts := resolverPrompts(p)
	if len(prompts) != 1 {
		t.Fatalf("the agent ran %d times, want 1", len(prompts))
	}
	for _, want := range []string{"FILES README HUNKS", "<<<<<<<", "Say two", "Say one", ">>>>>>> main", "bd-2: Say two", "THEIRS", "bd-1: Say one", "BEAD Say two"} {
		if !strings.Contains(prompts[0], want) {
			t.Errorf("the agent's prompt lacks %q:\n%s", want, prompts[0])
		}
	}
	phases := ""
	for _, e := range p.events(s.ID) {
		if e.Kind() == "workflow.merge_resolve" {
			phases += fmt.Sprint(e.Fields()["phase"]) + " "
		}
	}
	if phases != "conflicted agent resolved " {
		t.Errorf("merge_resolve phases: %q", phases)
	}
}

// A resolution the checks refuse blocks, and never lands: markers left
// (twice), the conflicted file deleted; a binary conflict is never given
// to an agent; without on_conflict the merge blocks as it always did.
func TestConflictResolutionRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, work, onConflict, spell string
		reason                        string
		agentRuns                     int
		says                          string
		midMerge                      bool
	}{
		{"markers left", "echo {{.bead.title}} > README", fixerLong,
			"record=../../resolver-{{.conflict.attempt}}.json write=README:<<<<<<<_mine cat=../../ok.md PROBLEM {{.conflict.problem}}\n",
			"merge_conflict", 2, "conflict markers are left in README (line 1)", true},
		{"file deleted", "echo {{.bead.title}} > README", fixerLong,
			"record=../../resolver-{{.conflict.attempt}}.json exec=rm_README cat=../../ok.md\n",
			"merge_conflict_deleted", 1, "README, a conflicted file, was deleted", true},
		{"binary", `printf 'bin\000{{.bead.id}}' > data.bin`, fixerLong,
			"record=../../resolver-{{.conflict.attempt}}.json cat=../../ok.md\n",
			"merge_conflict_binary", 0, "data.bin, binary", false},
		{"no on_conflict", "echo {{.bead.title}} > README", "",
			"record=../../resolver-{{.conflict.attempt}}.json cat=../../ok.md\n",
			"merge_conflict", 0, "conflicts with main in README", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, s := conflictProject(t, tc.work, tc.onConflict, tc.spell)
			before := p.git("rev-parse", "main")
			r := p.bdExec("resume", s.ID)
			wantCode(t, r, 3)
			s = p.sessionByID(s.ID)
			if s.Status != state.StatusBlocked || string(s.BlockedReason) != tc.reason || !strings.Contains(s.Error, tc.says) {
				t.Fatalf("status %s reason %q error %q\n%s", s.Status, s.BlockedReason, s.Error, r.stderr)
			}
			if after := p.git("rev-parse", "main"); after != before {
				t.Errorf("main moved: %s -> %s", before, after)
			}
			if n := len(resolverPrompts(p)); n != tc.agentRuns {
				t.Errorf("the agent ran %d times, want %d", n, tc.agentRuns)
			}
			wt := ".worktrees/bd-2"
			if got := p.exists(wt+"/.git") && strings.Contains(gitIn(t, p.path(wt), "status"), "All conflicts fixed but you are still merging") ||
				p.exists(wt+"/.git") && strings.Contains(gitIn(t, p.path(wt), "status"), "You have unmerged paths"); got != tc.midMerge {
				t.Errorf("the worktree in the middle of the merge: %v, want %v\n%s", got, tc.midMerge, gitIn(t, p.path(wt), "status"))
			}
			if tc.name == "markers left" {
				if prompts := resolverPrompts(p); !strings.Contains(prompts[1], "PROBLEM conflict markers are left in README") {
					t.Errorf("the second attempt was not told why the first was refused:\n%s", prompts[1])
				}
			}
			resolveEvents := 0
			for _, e := range p.events(s.ID) {
				if e.Kind() == "workflow.merge_resolve" {
					resolveEvents++
				}
			}
			if resolveEvents == 0 {
				t.Error("no workflow.merge_resolve event: the base was not merged into the branch")
			}
		})
	}
}

// gitIn runs git in dir and returns its output, whatever its exit.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// Two beads of one --ready run change the same line at once: whichever
// merges second conflicts (in the batch, or with the first landed), has
// the agent resolve it through the merge queue, and lands; each bead has
// its own merge commit on main's first-parent line, and closes.
func TestConflictResolvedInTheReadyQueue(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "Say one", nil), bead("bd-2", "Say two", nil))
	// Each bead waits for the other to have started: both branch from the
	// same main.
	work := "echo {{.bead.title}} > README && touch ../../started-{{.bead.id}} && while [ ! -f ../../started-bd-1 ] || [ ! -f ../../started-bd-2 ]; do sleep 0.05; done"
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf("name: ship\nsteps:\n  - name: work\n    type: script\n    command: %s\n  - name: merge\n    type: merge\n    require_review: false\n%s", work, fixerLong))
	p.write(".vibeteam/adapters/fixer.yaml", "name: fixer\ncommand: "+fakeAgent+"\nmodes:\n  headless:\n    args: []\n    prompt: { position: arg }\n")
	p.write(".vibeteam/spells/fix-conflict.md", "record=../../resolver-{{.conflict.attempt}}.json write=README:Say_one,_say_two cat=../../ok.md\n")
	p.write(".vibeteam/config.yaml", "merge:\n  batch: 4\n")
	p.write("ok.md", "```json\n{\"success\": true}\n```\n")
	p.write(".gitignore", "started-*\nresolver-*\n")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "the project")
	r := p.bdExec("run", "ship", "--ready", "--jobs", "2", "--headless")
	wantCode(t, r, 0)
	if got := p.git("show", "main:README"); got != "Say one, say two" {
		t.Errorf("main's README: %q\n%s", got, r.stderr)
	}
	firstParent := p.git("log", "--first-parent", "--format=%H %s", "main")
	if strings.Count(firstParent, " Merge ") != 2 || !strings.Contains(firstParent, "bd-1") || !strings.Contains(firstParent, "bd-2") {
		t.Errorf("main's first-parent history:\n%s", firstParent)
	}
	if n := len(resolverPrompts(p)); n != 1 {
		t.Errorf("the agent ran %d times, want 1", n)
	}
	calls := strings.Join(p.bdCalls(), "\n")
	for _, s := range p.sessions() {
		id, _ := s.Bead["id"].(string)
		if id == "" {
			continue // the backlog's own session
		}
		if s.Status != state.StatusCompleted || s.Merged == "" || !strings.Contains(firstParent, s.Merged+" Merge ") {
			t.Errorf("%s: %s, merged %q, not a merge on main's first-parent line", id, s.Status, s.Merged)
		}
		closed := false
		for _, c := range p.bdCalls() {
			closed = closed || strings.HasPrefix(c, "close ") && slices.Contains(strings.Fields(c), id)
		}
		if !closed {
			t.Errorf("%s was not closed:\n%s", id, calls)
		}
	}
}
