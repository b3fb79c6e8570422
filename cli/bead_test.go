package cli

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vibeteam/vibeteam/cli/showcmd"
	"github.com/vibeteam/vibeteam/core/state"
)

// beadProject is a project that is a git repository on main with one
// commit, and a fake bd whose database holds the beads given.
type beadProject struct {
	*project
	db, log string
}

func newBeadProject(t *testing.T, beads ...map[string]any) *beadProject {
	t.Helper()
	p := &beadProject{project: newProject(t)}
	p.db, p.log = filepath.Join(t.TempDir(), "beads.json"), filepath.Join(t.TempDir(), "bd.log")
	db := map[string]any{}
	for _, b := range beads {
		db[b["id"].(string)] = b
	}
	data, _ := json.Marshal(db)
	if err := os.WriteFile(p.db, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p.write("README", "hello\n")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "root"},
	} {
		p.git(args...)
	}
	return p
}

func (p *beadProject) git(args ...string) string {
	p.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@u"}, args...)...)
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// bdExec runs vibeteam with the fake bd on PATH.
func (p *beadProject) bdExec(args ...string) result {
	p.t.Helper()
	cmd := p.command(args...)
	cmd.Env = append(cmd.Env, "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB="+p.db, "FAKEBD_LOG="+p.log)
	return runResult(p.t, cmd)
}

// bdCalls are the fake bd's calls, one "arg arg ..." line each.
func (p *beadProject) bdCalls() []string {
	data, _ := os.ReadFile(p.log)
	var calls []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c struct{ Args []string }
		if json.Unmarshal([]byte(l), &c) == nil {
			calls = append(calls, strings.Join(c.Args, " "))
		}
	}
	return calls
}

// snapshot is what the user's checkout is: HEAD, the index, the status and
// every file's content (untracked ones included), and every ref.
func (p *beadProject) snapshot() string {
	p.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "HEAD %s %s\n", p.git("rev-parse", "HEAD"), p.git("symbolic-ref", "-q", "HEAD"))
	fmt.Fprintf(&b, "index %s\nstatus %s\nrefs %s\n", p.git("ls-files", "--stage"), p.git("status", "--porcelain=v1", "--untracked-files=all", "--", ".", ":!.vibeteam"), p.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/main"))
	_ = filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(p.dir, path)
		if d.IsDir() && (rel == ".git" || rel == ".vibeteam" || rel == ".worktrees") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			data, _ := os.ReadFile(path)
			fmt.Fprintf(&b, "%s %x\n", rel, sha256.Sum256(data))
		}
		return nil
	})
	return b.String()
}

func bead(id, title string, extra map[string]any) map[string]any {
	b := map[string]any{"id": id, "title": title, "description": "the " + title, "status": "open", "issue_type": "feature",
		"priority": 2, "labels": []any{}, "dependencies": []any{}, "acceptance_criteria": "it works", "assignee": ""}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

const mergeGrimoireYAML = `name: ship
steps:
  - name: work
    type: script
    command: echo {{.bead.title}} > feature.txt
  - name: merge
    type: merge
    require_review: %s
  - name: after
    type: script
    command: pwd
`

func TestBeadRunMergesWithoutReview(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "Add the feature", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "false"))
	p.write("notes.txt", "mine, uncommitted\n") // the user's own untracked file
	r := p.bdExec("run", "ship", "--bead", "bd-1")
	wantCode(t, r, 0)
	s := p.only()
	if s.Status != state.StatusCompleted || s.Merged == "" || s.Branch != "vibeteam/bd-1" || s.BaseBranch != "main" {
		t.Fatalf("status %s merged %q branch %q base %q\n%s", s.Status, s.Merged, s.Branch, s.BaseBranch, r.stderr)
	}
	// The work is on main as a merge commit; the user's checkout updated as
	// git merge would, their untracked file kept.
	if got := p.git("show", "main:feature.txt"); got != "Add the feature" {
		t.Errorf("main:feature.txt = %q", got)
	}
	if parents := strings.Fields(p.git("log", "-1", "--format=%P", "main")); len(parents) != 2 {
		t.Errorf("main's last commit has parents %v, want a merge", parents)
	}
	if p.read("notes.txt") != "mine, uncommitted\n" || p.read("feature.txt") != "Add the feature\n" {
		t.Error("the checkout was not updated as git merge would, or lost the user's file")
	}
	// Steps after the merge ran in the worktree, which is then removed.
	if got := s.Runs["2"].Output; !strings.HasSuffix(got, "/.worktrees/bd-1") {
		t.Errorf("the step after the merge ran in %q", got)
	}
	if p.exists(".worktrees/bd-1") {
		t.Error("the worktree was left after the merge")
	}
	if out := p.git("branch", "--list", "vibeteam/*"); out != "" {
		t.Errorf("branch left: %s", out)
	}
	calls := strings.Join(p.bdCalls(), "\n")
	for _, want := range []string{"show bd-1 --json", "update bd-1 --claim --json", "close bd-1 --reason Completed by vibeteam grimoire ship"} {
		if !strings.Contains(calls, want) {
			t.Errorf("bd was not called with %q:\n%s", want, calls)
		}
	}
	if st := p.git("status", "--porcelain"); st != "?? notes.txt" {
		t.Errorf("git status shows %q (.worktrees and .vibeteam must be excluded)", st)
	}
}

func TestBeadMergeWaitsForReviewThenApproveOrReject(t *testing.T) {
	t.Parallel()
	for _, decision := range []string{"approve", "reject"} {
		t.Run(decision, func(t *testing.T) {
			t.Parallel()
			p := newBeadProject(t, bead("bd-7", "Ship it", nil))
			p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "true"))
			before := p.snapshot()
			r := p.bdExec("run", "ship", "--bead", "bd-7")
			wantCode(t, r, 3)
			s := p.only()
			if s.Status != state.StatusPendingMerge || !strings.Contains(r.stderr, "--approve-merge") {
				t.Fatalf("status %s\n%s", s.Status, r.stderr)
			}
			if p.snapshot() != before {
				t.Fatal("the checkout changed before the review")
			}
			if calls := strings.Join(p.bdCalls(), "\n"); !strings.Contains(calls, "update bd-7 --status blocked") {
				t.Errorf("the bead was not set blocked:\n%s", calls)
			}
			found := false
			for _, e := range p.events(s.ID) {
				if e.Kind() == "workflow.merge_pending" && strings.Contains(fmt.Sprint(e.Fields()["stat"]), "feature.txt") {
					found = true
				}
			}
			if !found {
				t.Error("no workflow.merge_pending event with the diff stat")
			}
			if decision == "approve" {
				r = p.bdExec("resume", s.ID, "--approve-merge")
				wantCode(t, r, 0)
				if got := p.git("show", "main:feature.txt"); got != "Ship it" {
					t.Errorf("not merged: %q", got)
				}
				s = p.only()
				if s.Runs["2"] == nil || s.Runs["2"].Status != "done" || s.Runs["0"].Attempts != 1 {
					t.Errorf("after approve: %+v / %+v", s.Runs["2"], s.Runs["0"])
				}
				return
			}
			r = p.bdExec("resume", s.ID, "--reject-merge", "--reason", "wrong approach")
			wantCode(t, r, 3)
			s = p.only()
			if s.Status != state.StatusBlocked || s.BlockedReason != "merge_rejected" || !strings.Contains(s.Error, "wrong approach") {
				t.Errorf("after reject: %s %s %q", s.Status, s.BlockedReason, s.Error)
			}
			if p.snapshot() != before || !p.exists(".worktrees/bd-7/feature.txt") {
				t.Error("a rejection changed the checkout or discarded the worktree")
			}
		})
	}
}

func TestBeadMergeConflictLeavesEverythingAsItWas(t *testing.T) {
	t.Parallel()
	// The bead edits README; while it waits, main edits the same line.
	p2 := newBeadProject(t, bead("bd-4", "Conflict", nil))
	p2.write(".vibeteam/grimoires/ship.yaml", `name: ship
steps:
  - name: work
    type: script
    command: echo from the bead > README
  - name: wait
    type: script
    command: test -f ../../main-moved
  - name: merge
    type: merge
    require_review: false
`)
	r := p2.bdExec("run", "ship", "--bead", "bd-4")
	wantCode(t, r, 3) // blocked at "wait": main has not moved yet
	p2.write("README", "from main\n")
	p2.git("commit", "-q", "-am", "main moved")
	p2.write("main-moved", "")
	p2.write("notes.txt", "untracked, mine\n")
	p2.write("mine.txt", "committed\n")
	p2.git("add", "mine.txt")
	p2.git("commit", "-q", "-m", "mine")
	p2.write("mine.txt", "committed, then changed and not committed\n") // a modified tracked file
	p2.write("other-change.txt", "x\n")
	before := p2.snapshot()
	s := p2.only()
	r = p2.bdExec("resume", s.ID)
	wantCode(t, r, 3)
	s = p2.only()
	if s.Status != state.StatusBlocked || s.BlockedReason != "merge_conflict" {
		t.Fatalf("status %s reason %q\n%s", s.Status, s.BlockedReason, r.stderr)
	}
	if after := p2.snapshot(); after != before {
		t.Errorf("a conflicting merge changed the checkout:\nbefore\n%s\nafter\n%s", before, after)
	}
	for _, want := range []string{"README", "<<<<<<<", "from main", "from the bead", "--approve-merge"} {
		if !strings.Contains(s.BlockedContext+r.stderr, want) {
			t.Errorf("the conflict report lacks %q:\n%s", want, s.BlockedContext)
		}
	}
	if !p2.exists(".worktrees/bd-4/README") {
		t.Error("the worktree was not kept")
	}
}

func TestBeadSelectionBlockersAndErrors(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t,
		bead("bd-1", "Labelled", map[string]any{"labels": []any{"grimoire:labelled"}}),
		bead("bd-2", "A bug", map[string]any{"issue_type": "bug"}),
		bead("bd-3", "Blocked", map[string]any{"dependencies": []any{map[string]any{"id": "bd-4", "status": "open", "dependency_type": "blocks"}}}),
		bead("bd-4", "Not started", nil),
	)
	for _, name := range []string{"labelled", "by-type"} {
		p.write(".vibeteam/grimoires/"+name+".yaml", "name: "+name+"\nsteps:\n  - name: s\n    type: script\n    command: echo {{.bead.id}} > chosen-"+name+".txt\n")
	}
	p.write(".vibeteam/config.yaml", "grimoires:\n  by_type: {bug: by-type}\n")
	r := p.bdExec("run", "--bead", "bd-1")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "grimoire labelled (label grimoire:labelled)") {
		t.Errorf("the rule is not said:\n%s", r.stderr)
	}
	r = p.bdExec("run", "--bead", "bd-2")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "grimoire by-type (.vibeteam/config.yaml grimoires.by_type.bug)") {
		t.Errorf("the rule is not said:\n%s", r.stderr)
	}
	r = p.bdExec("run", "by-type", "--bead", "bd-3")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "blocked by bd-4 (open)") {
		t.Errorf("blockers not named:\n%s", r.stderr)
	}
	r = p.bdExec("run", "by-type", "--bead", "bd-9")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, `no issue found matching "bd-9"`) {
		t.Errorf("bd's own message is not shown:\n%s", r.stderr)
	}
	// Without bd on PATH, the error says what to install.
	cmd := p.command("run", "by-type", "--bead", "bd-2")
	cmd.Env = append(cmd.Env, "PATH=/usr/bin:/bin")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "--bead-file") || !strings.Contains(string(out), "install") {
		t.Errorf("no bd: %s", out)
	}
	// A grimoire with a merge step needs a bead.
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "true"))
	r = p.bdExec("run", "ship")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "--bead") {
		t.Errorf("merge without a bead: %s", r.stderr)
	}
}

// The built-in implement-bead runs end to end: the agents (the fake agent
// as claude) report success and approve the review, the tests step finds
// no build file, and the merge waits for a person, then merges on approval.
func TestImplementBeadEndToEnd(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-5", "Add a greeting", nil))
	p.write(".vibeteam/adapters/claude.yaml", "name: claude\ncommand: "+fakeAgent+"\nmodes:\n  headless: { args: [write=greeting.txt:hello, cat=../../answer.md], prompt: { position: arg } }\n")
	p.write("answer.md", "Done.\n```json\n{\"success\": true, \"summary\": \"greeted\", \"outputs\": {\"approved\": true, \"findings\": []}}\n```\n")
	p.git("add", "answer.md", ".vibeteam/adapters/claude.yaml")
	p.git("commit", "-q", "-m", "fixtures")
	r := p.bdExec("run", "--bead", "bd-5")
	wantCode(t, r, 3)
	if !strings.Contains(r.stderr, "grimoire implement-bead (the built-in default)") {
		t.Errorf("selection not said:\n%s", r.stderr)
	}
	s := p.only()
	if s.Status != state.StatusPendingMerge {
		t.Fatalf("status %s: %s\n%s", s.Status, s.Error, r.stderr)
	}
	var names []string
	for _, e := range p.stepEvents(s.ID) {
		names = append(names, fmt.Sprintf("%s:%s", e.Fields()["name"], e.Fields()["status"]))
	}
	if got := strings.Join(names, " "); got != "implement:done tests:done fix:skipped review:done apply-review:skipped retest:done quality:done merge:waiting" {
		t.Errorf("steps: %s", got)
	}
	r = p.bdExec("resume", s.ID, "--approve-merge")
	wantCode(t, r, 0)
	if got := p.git("show", "main:greeting.txt"); got != "hello" {
		t.Errorf("main:greeting.txt = %q", got)
	}
	if calls := strings.Join(p.bdCalls(), "\n"); !strings.Contains(calls, "close bd-5") {
		t.Errorf("the bead was not closed:\n%s", calls)
	}
}

// ready lists the ready beads with their grimoires, and the README's
// parallel recipe runs three beads at once, each in its own worktree.
func TestReadyAndThreeBeadsAtOnce(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t,
		bead("bd-1", "One", nil), bead("bd-2", "Two", nil), bead("bd-3", "Three", nil),
		bead("bd-4", "Blocked", map[string]any{"dependencies": []any{map[string]any{"id": "bd-1", "status": "open", "dependency_type": "blocks"}}}),
	)
	p.write(".vibeteam/grimoires/ship.yaml", `name: ship
steps:
  - name: work
    type: script
    command: echo {{.bead.title}} > {{.bead.id}}.txt; sleep 0.3
  - name: merge
    type: merge
    require_review: false
`)
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\n")
	r := p.bdExec("ready", "--json")
	wantCode(t, r, 0)
	var rows []readyBead
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 3 || rows[0].Grimoire != "ship" {
		t.Fatalf("ready: %v %+v\n%s", err, rows, r.stdout)
	}
	// xargs -P 3: three vibeteams at once.
	cmd := exec.Command("sh", "-c", `printf 'bd-1\nbd-2\nbd-3\n' | xargs -P 3 -I{} "$VT" --base-dir "$DIR" run --bead {} --headless`)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "VT="+vibeteam, "DIR="+p.dir, "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB="+p.db, "FAKEBD_LOG="+p.log)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("parallel runs: %v\n%s", err, out)
	}
	for _, id := range []string{"bd-1", "bd-2", "bd-3"} {
		if _, err := exec.Command("git", "-C", p.dir, "show", "main:"+id+".txt").Output(); err != nil {
			t.Errorf("%s was not merged into main", id)
		}
	}
	if n := len(p.sessions()); n != 3 {
		t.Errorf("%d sessions", n)
	}
}

func TestCancelParkedAndRunning(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "Parked", nil), bead("bd-2", "Running", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "true"))
	p.write(".vibeteam/grimoires/slow.yaml", "name: slow\nsteps:\n  - name: wait\n    type: script\n    command: touch started; sleep 60\n")

	// A parked session (pending_merge): cancelled, the bead open again, the
	// worktree kept; --clean refuses its unmerged commits without --force.
	r := p.bdExec("run", "ship", "--bead", "bd-1")
	wantCode(t, r, 3)
	parked := p.only().ID
	r = p.bdExec("cancel", parked)
	wantCode(t, r, 0)
	if s := p.sessionByID(parked); s.Status != state.StatusCancelled || !p.exists(".worktrees/bd-1/feature.txt") {
		t.Fatalf("status %s, worktree kept %v", s.Status, p.exists(".worktrees/bd-1/feature.txt"))
	}
	if calls := strings.Join(p.bdCalls(), "\n"); !strings.HasSuffix(calls, "update bd-1 --status open --assignee ") {
		t.Errorf("the bead was not set open:\n%s", calls)
	}
	// Its claim is given back: open and nobody's, another may claim it.
	db := map[string]map[string]any{}
	readJSON(t, p.db, &db)
	if b := db["bd-1"]; b["status"] != "open" || b["assignee"] != "" {
		t.Errorf("bd-1 after cancel: status %v, assignee %v", b["status"], b["assignee"])
	}
	r = p.bdExec("cancel", parked, "--clean")
	wantCode(t, r, 1)
	if !p.exists(".worktrees/bd-1/feature.txt") {
		t.Error("--clean removed unmerged work")
	}
	r = p.bdExec("cancel", parked, "--clean", "--force")
	wantCode(t, r, 0)
	if p.exists(".worktrees/bd-1") || p.git("branch", "--list", "vibeteam/bd-1") != "" {
		t.Error("--clean --force left the worktree or branch")
	}

	// A running session: stopped (its process group too), then cancelled.
	cmd := p.command("run", "slow", "--bead", "bd-2", "--grace", "500ms")
	cmd.Env = append(cmd.Env, "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB="+p.db, "FAKEBD_LOG="+p.log)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, func() bool { return p.exists(".worktrees/bd-2/started") })
	var running string
	for _, s := range p.sessions() {
		if s.ID != parked {
			running = s.ID
		}
	}
	r = p.bdExec("cancel", running)
	wantCode(t, r, 0)
	if err := <-done; err == nil {
		t.Error("the cancelled run exited 0")
	}
	if s := p.sessionByID(running); s.Status != state.StatusCancelled {
		t.Errorf("status %s", s.Status)
	}
	if calls := strings.Join(p.bdCalls(), "\n"); !strings.HasSuffix(calls, "update bd-2 --status open --assignee ") {
		t.Errorf("the bead was not set open:\n%s", calls)
	}
}

func (p *project) sessionByID(id string) *state.Session {
	p.t.Helper()
	for _, s := range p.sessions() {
		if s.ID == id {
			return s
		}
	}
	p.t.Fatalf("no session %s", id)
	return nil
}

// The review at a terminal: the bead, the commits and the diff stat, then
// the person's choice; d shows the diff (PAGER=cat here) and asks again.
func TestMergeReviewAtTheTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keys   []string
		code   int
		status state.Status
	}{
		{[]string{"d", "a"}, 0, state.StatusCompleted},
		{[]string{"r", "not like this"}, 3, state.StatusBlocked},
		{[]string{"l"}, 3, state.StatusPendingMerge},
	} {
		t.Run(tc.keys[0], func(t *testing.T) {
			t.Parallel()
			p := newBeadProject(t)
			p.write("bead.json", `{"id": "bd-8", "title": "Reviewed at a terminal"}`)
			p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "true"))
			cmd, c, screen := reviewAtTerminal(t, p)
			expectAll(t, c, screen, "review: merge vibeteam/bd-8 into main", "bd-8: Reviewed at a terminal", "feature.txt", "review › ")
			for _, k := range tc.keys {
				_, _ = c.SendLine(k)
				if k == "d" {
					expectAll(t, c, screen, "+Reviewed at a terminal", "review › ")
				}
			}
			if code := waitExit(t, cmd, screen); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, screen.String())
			}
			s := p.only()
			if s.Status != tc.status {
				t.Fatalf("status %s, want %s", s.Status, tc.status)
			}
			if tc.status == state.StatusBlocked && !strings.Contains(s.Error, "not like this") {
				t.Errorf("the reason is not kept: %q", s.Error)
			}
			merged := p.git("log", "-1", "--format=%s", "main")
			if (tc.code == 0) != strings.HasPrefix(merged, "Merge vibeteam/bd-8") {
				t.Errorf("main's last commit %q after %v", merged, tc.keys)
			}
		})
	}
}

// spec-to-beads: the agent (the fake, running the fake bd) creates two
// beads and reports them; the check finds both.
func TestSpecToBeadsEndToEnd(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write("docs/spec.md", "# A spec\n\nTwo things to do.\n")
	p.write(".vibeteam/adapters/claude.yaml", "name: claude\ncommand: "+fakeAgent+"\nmodes:\n  headless: { args: [exec=bd_create_--title_First_--json, exec=bd_create_--title_Second, exec=bd_dep_add_bd-2_bd-1, cat=answer.md], prompt: { position: arg } }\n")
	p.write("answer.md", "```json\n{\"success\": true, \"outputs\": {\"created\": [\"bd-1\", \"bd-2\"]}}\n```\n")
	r := p.bdExec("run", "spec-to-beads", "--set", "spec=docs/spec.md")
	wantCode(t, r, 0)
	s := p.only()
	if got := s.Runs["2"].Output; got != "2 bead(s) created" {
		t.Errorf("check printed %q\n%s", got, r.stderr)
	}
	calls := strings.Join(p.bdCalls(), "\n")
	for _, want := range []string{"create --title First --json", "dep add bd-2 bd-1", "show bd-1 --json", "show bd-2 --json"} {
		if !strings.Contains(calls, want) {
			t.Errorf("no bd %s:\n%s", want, calls)
		}
	}
	// A bead reported but not created is caught.
	p.write("answer.md", "```json\n{\"success\": true, \"outputs\": {\"created\": [\"bd-1\", \"bd-77\"]}}\n```\n")
	r = p.bdExec("run", "spec-to-beads", "--set", "spec=docs/spec.md")
	wantCode(t, r, 3)
	if !strings.Contains(r.stderr, "bead bd-77 was reported but does not exist") {
		t.Errorf("missing bead not caught:\n%s", r.stderr)
	}
}

// prepare-pr without gh prints the command, with the bead's title.
func TestPreparePRWithoutGh(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write("bead.json", `{"id": "bd-3", "title": "Add it's feature", "description": "Why: because."}`)
	p.write("f.txt", "x\n")
	p.git("add", "f.txt")
	p.git("commit", "-q", "-m", "work")
	cmd := p.command("run", "prepare-pr", "--set", "title=unused")
	cmd.Env = append(cmd.Env, "PATH=/usr/bin:/bin") // no gh
	r := runResult(t, cmd)
	wantCode(t, r, 0)
	s := p.only()
	if got := s.Runs["1"].Output; !strings.Contains(got, "gh is not installed") || !strings.Contains(got, "gh pr create --draft --title 'unused'") {
		t.Errorf("pr step printed %q", got)
	}
}

// A second run on a bead that has a live session is refused, naming it.
func TestSecondRunOnALiveBeadIsRefused(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-1", "Busy", nil))
	p.write(".vibeteam/grimoires/slow.yaml", "name: slow\nsteps:\n  - name: wait\n    type: script\n    command: touch started; sleep 60\n")
	cmd := p.command("run", "slow", "--bead-file", "bead.json", "--grace", "500ms")
	p.write("bead.json", `{"id": "bd-1", "title": "Busy"}`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	waitFor(t, func() bool { return p.exists(".worktrees/bd-1/started") })
	first := p.only().ID
	r := p.exec("run", "slow", "--bead-file", "bead.json")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "bead bd-1 already has a running session, "+first) {
		t.Errorf("stderr: %s", r.stderr)
	}
	if n := len(p.sessions()); n != 1 {
		t.Errorf("%d sessions", n)
	}
}

// preview --bead reads the bead through bd without changing it, and
// without a NAME says which rule chose the grimoire, as run does.
func TestPreviewChoosesTheGrimoireOfABead(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t,
		bead("bd-1", "Labelled", map[string]any{"labels": []any{"grimoire:labelled"}}),
		bead("bd-2", "A bug", map[string]any{"issue_type": "bug"}),
		bead("bd-3", "Blocked", map[string]any{"issue_type": "chore", "dependencies": []any{map[string]any{"id": "bd-4", "status": "open", "dependency_type": "blocks"}}}),
		bead("bd-4", "Not started", map[string]any{"issue_type": "task"}),
	)
	for _, name := range []string{"labelled", "by-type", "fallback"} {
		p.write(".vibeteam/grimoires/"+name+".yaml", "name: "+name+"\nsteps:\n  - name: s\n    type: script\n    command: echo {{.bead.title}} > chosen-"+name+".txt\n")
	}
	p.write(".vibeteam/config.yaml", "grimoires:\n  by_type: {bug: by-type}\n  default: fallback\n")
	for _, c := range []struct {
		args       []string
		rule, show string
	}{
		{[]string{"--bead", "bd-1"}, "bead bd-1: grimoire labelled (label grimoire:labelled)", "echo 'Labelled' > chosen-labelled.txt"},
		{[]string{"--bead", "bd-2"}, "bead bd-2: grimoire by-type (.vibeteam/config.yaml grimoires.by_type.bug)", "echo 'A bug' > chosen-by-type.txt"},
		{[]string{"--bead", "bd-4"}, "bead bd-4: grimoire fallback (.vibeteam/config.yaml grimoires.default)", "echo 'Not started' > chosen-fallback.txt"},
		// A NAME wins over the rules, and the rule line is not printed.
		{[]string{"labelled", "--bead", "bd-2"}, "", "echo 'A bug' > chosen-labelled.txt"},
	} {
		r := p.bdExec(append([]string{"preview"}, c.args...)...)
		wantCode(t, r, 0)
		if c.rule != "" && !strings.HasPrefix(r.stdout, c.rule+"\n") {
			t.Errorf("preview %v does not begin with %q:\n%s", c.args, c.rule, r.stdout)
		}
		if c.rule == "" && strings.Contains(r.stdout, "grimoire labelled (") {
			t.Errorf("preview %v printed a rule for a named grimoire:\n%s", c.args, r.stdout)
		}
		if !strings.Contains(r.stdout, c.show) {
			t.Errorf("preview %v does not show %q:\n%s", c.args, c.show, r.stdout)
		}
	}
	// Blockers are a warning; preview still shows what run would do.
	r := p.bdExec("preview", "--bead", "bd-3")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "blocked by bd-4 (open)") || !strings.Contains(r.stdout, "grimoire fallback") {
		t.Errorf("blocked bead:\n%s\n%s", r.stdout, r.stderr)
	}
	// Without the config, the last rule: implement-bead.
	if err := os.Remove(p.path(".vibeteam/config.yaml")); err != nil {
		t.Fatal(err)
	}
	r = p.bdExec("preview", "--bead", "bd-4")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "bead bd-4: grimoire implement-bead (") {
		t.Errorf("no config:\n%s", r.stdout)
	}
	r = p.bdExec("preview", "--bead", "bd-9")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, `no issue found matching "bd-9"`) {
		t.Errorf("bd's message is not shown:\n%s", r.stderr)
	}
	r = p.bdExec("preview")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "--bead") {
		t.Errorf("preview without a name or a bead:\n%s", r.stderr)
	}
	// Only reads: no status change, no session, no worktree.
	for _, call := range p.bdCalls() {
		if !strings.HasPrefix(call, "show ") && call != "blocked --json" {
			t.Errorf("preview called bd %s", call)
		}
	}
	if p.exists(".worktrees") || p.exists(".vibeteam/sessions") {
		t.Error("preview wrote a worktree or a session")
	}
}

// show and sessions give a bead's session: the bead, the worktree, why it
// waits, and the command to type next.
func TestShowAndSessionsOfABead(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-5", "Shown", nil), bead("bd-6", "Rejected", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "true"))
	wantCode(t, p.bdExec("run", "ship", "--bead", "bd-5"), 3)
	wantCode(t, p.bdExec("run", "ship", "--bead", "bd-6"), 3)
	ids := map[string]string{}
	for _, s := range p.sessions() {
		ids[s.Bead["id"].(string)] = s.ID
	}
	wantCode(t, p.bdExec("resume", ids["bd-6"], "--reject-merge", "--reason", "not this way"), 3)

	r := p.bdExec("show", ids["bd-5"])
	wantCode(t, r, 0)
	for _, want := range []string{"bead      bd-5: Shown (bd)", "worktree  " + filepath.Join(p.dir, ".worktrees", "bd-5") + " (branch vibeteam/bd-5, merges into main)",
		"pending_merge", "vibeteam resume " + ids["bd-5"] + " --approve-merge", "--reject-merge"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show of a pending merge lacks %q:\n%s", want, r.stdout)
		}
	}
	r = p.bdExec("show", ids["bd-6"])
	wantCode(t, r, 0)
	for _, want := range []string{"bead      bd-6: Rejected", "blocked   merge_rejected", "vibeteam resume " + ids["bd-6"]} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show of a rejected merge lacks %q:\n%s", want, r.stdout)
		}
	}

	r = p.bdExec("sessions")
	wantCode(t, r, 0)
	for _, want := range []string{"pending_merge", "blocked (merge_rejected)", "bead bd-5: Shown", "bead bd-6: Rejected",
		"waiting for you:", "vibeteam resume " + ids["bd-5"] + " --approve-merge", "worktree " + filepath.Join(p.dir, ".worktrees", "bd-6")} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("sessions lacks %q:\n%s", want, r.stdout)
		}
	}
	r = p.bdExec("sessions", "--json")
	wantCode(t, r, 0)
	var rows []showcmd.Summary
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]showcmd.Summary{}
	for _, row := range rows {
		got[row.Bead] = row
	}
	if g := got["bd-5"]; g.Status != "pending_merge" || g.Worktree != filepath.Join(p.dir, ".worktrees", "bd-5") || !strings.Contains(g.Next, "--approve-merge") {
		t.Errorf("sessions --json, pending merge: %+v", g)
	}
	if g := got["bd-6"]; g.Status != "blocked" || g.BlockedReason != "merge_rejected" || g.Next != "vibeteam resume "+ids["bd-6"] {
		t.Errorf("sessions --json, rejected: %+v", g)
	}
}

// A bd status update that fails is a warning with bd's message; the run
// goes on and completes.
func TestFailedBeadUpdateIsAWarning(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-8", "Warned", nil))
	p.write(".vibeteam/grimoires/ship.yaml", "name: ship\nsteps:\n  - name: s\n    type: script\n    command: echo ok\n")
	cmd := p.command("run", "ship", "--bead", "bd-8")
	cmd.Env = append(cmd.Env, "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB="+p.db, "FAKEBD_LOG="+p.log, "FAKEBD_FAIL=update")
	r := runResult(t, cmd)
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "database is locked") {
		t.Errorf("bd's message is not shown as a warning:\n%s", r.stderr)
	}
	if s := p.only(); s.Status != state.StatusCompleted {
		t.Errorf("status %s", s.Status)
	}
}
