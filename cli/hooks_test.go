package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	expect "github.com/Netflix/go-expect"

	"github.com/vibeteam/vibeteam/core/state"
)

// TestRepositoryHooks: vibeteam's plumbing (worktree creation, the merge
// into the base, branch deletion) runs without the repository's hooks, so
// a hook's artifact is never committed and a hook that leaves a process
// behind does not hold the run; the commit of the steps' work honours
// pre-commit and commit-msg.
func TestRepositoryHooks(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "false"))
	p.write("bead.json", `{"id":"bd-5","title":"Hooked","status":"open"}`)
	hooks := filepath.Join(p.dir, ".git", "hooks")
	hook := func(name, body string) {
		if err := os.WriteFile(filepath.Join(hooks, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Hooks of plumbing: they must not run.
	hook("post-checkout", "echo made by a hook > hook-artifact.txt\nsleep 45 &\n")
	hook("post-merge", "echo merged > post-merge-ran.txt\n")
	hook("reference-transaction", "cat >> \""+p.dir+"/../ref-hook-ran\"\n")
	// Hooks of the commit: they must.
	hook("pre-commit", "echo pre-commit >> \""+p.dir+"/../pre-commit-ran\"\n")
	hook("commit-msg", "echo 'Hooked-By: commit-msg' >> \"$1\"\n")

	start := time.Now()
	r := p.exec("run", "ship", "--bead-file", "bead.json")
	took := time.Since(start)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if took > 20*time.Second {
		t.Errorf("the run took %v: a hook's background process held it", took)
	}
	if files := p.git("ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "hook-artifact") {
		t.Errorf("a hook's artifact landed on main:\n%s", files)
	}
	for _, f := range []string{"hook-artifact.txt", "post-merge-ran.txt"} {
		if p.exists(f) {
			t.Errorf("%s: a plumbing hook ran in the checkout", f)
		}
	}
	// The commit moves the bead's branch (its hooks run); the merge into
	// main and the branch's deletion are vibeteam's plumbing.
	if refs, _ := os.ReadFile(filepath.Join(p.dir, "..", "ref-hook-ran")); strings.Contains(string(refs), "refs/heads/main") {
		t.Errorf("reference-transaction ran for vibeteam's own ref moves:\n%s", refs)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "..", "pre-commit-ran")); err != nil {
		t.Error("pre-commit did not run for the commit of the steps' work")
	}
	if msg := p.git("log", "--format=%B", "main^2", "-1"); !strings.Contains(msg, "Hooked-By: commit-msg") {
		t.Errorf("commit-msg did not run for the work's commit:\n%s", msg)
	}
}

// TestBDChildKeepingThePipeDoesNotHang: a bd wrapper whose child stays in
// the background with bd's output open does not hold the run.
func TestBDChildKeepingThePipeDoesNotHang(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-3", "Wrapped", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "false"))
	wrapper := t.TempDir()
	if err := os.WriteFile(filepath.Join(wrapper, "bd"), []byte("#!/bin/sh\n\""+filepath.Join(fakeBDDir, "bd")+"\" \"$@\"\nrc=$?\nsleep 45 &\nexit $rc\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := p.command("run", "ship", "--bead", "bd-3")
	cmd.Env = append(cmd.Env, "PATH="+wrapper+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB="+p.db, "FAKEBD_LOG="+p.log)
	start := time.Now()
	r := runResult(t, cmd)
	took := time.Since(start)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if took > 30*time.Second {
		t.Errorf("the run took %v: bd's lingering child held it", took)
	}
	if calls := strings.Join(p.bdCalls(), "\n"); !strings.Contains(calls, "close bd-3") {
		t.Errorf("bd calls:\n%s", calls)
	}
}

// TestSignalAtTheReviewPromptExits143: SIGTERM while a person is asked to
// review a merge saves the session (pending_merge, resumable) and exits
// 143, as a signal at any other moment does.
func TestSignalAtTheReviewPromptExits143(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write("bead.json", `{"id": "bd-8", "title": "Interrupted review"}`)
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "true"))
	cmd, c, screen := reviewAtTerminal(t, p)
	expectAll(t, c, screen, "review: merge vibeteam/bd-8 into main", "review › ")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, cmd, screen); code != 143 {
		t.Fatalf("exit %d, want 143\n%s", code, screen.String())
	}
	if s := p.only(); s.Status != state.StatusPendingMerge {
		t.Errorf("status %s, want pending_merge", s.Status)
	}
	if p.git("log", "-1", "--format=%s", "main") != "root" {
		t.Error("main moved")
	}
}

// TestCancelAfterTheMergeLandedSaysSo: a session stopped while its merge
// was under way, the base branch having the work already: cancel reports
// the merge as done, the session completed (never cancelled) with a note
// naming the step after the merge that did not run, closes the bead and
// removes the (merged) worktree, never "cancelled, bead open" with the
// work on main.
func TestCancelAfterTheMergeLandedSaysSo(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-4", "Landed", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "true"))
	if r := p.bdExec("run", "ship", "--bead", "bd-4"); r.code != 3 {
		t.Fatalf("exit %d, want 3 (pending_merge)\n%s", r.code, r.stderr)
	}
	s := p.only()
	// What a kill right after git moved main leaves: the merge intent
	// open, main with the branch.
	p.git("merge", "--no-ff", "-q", "-m", "merged by the killed run", s.Branch)
	s.Intent = &state.GitIntent{Kind: state.IntentMerge, Branch: s.Branch, Base: s.BaseBranch, Path: s.Worktree}
	if err := state.NewManager(p.dir).Save(s); err != nil {
		t.Fatal(err)
	}
	r := p.bdExec("cancel", s.ID)
	if r.code != 0 || !strings.Contains(r.stderr, "completed: a cancel came during the merge, which had landed") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	after := p.sessionByID(s.ID)
	if after.Merged != p.git("rev-parse", "main") || after.Intent != nil || after.Status != state.StatusCompleted {
		t.Errorf("status %s merged %q intent %+v", after.Status, after.Merged, after.Intent)
	}
	if !strings.Contains(after.Note, "did not run: after") {
		t.Errorf("note %q", after.Note)
	}
	calls := strings.Join(p.bdCalls(), "\n")
	if !strings.Contains(calls, "close bd-4") || strings.Contains(calls, "update bd-4 --status open") {
		t.Errorf("the bead was not closed, or was reopened:\n%s", calls)
	}
	if p.exists(".worktrees/bd-4") || p.git("branch", "--list", "vibeteam/*") != "" {
		t.Error("the merged worktree or branch is left")
	}
	showAgreesWithGit(t, p, s.ID)
}

// reviewAtTerminal runs the ship grimoire on bead.json with a real
// terminal, where its merge review is asked.
func reviewAtTerminal(t *testing.T, p *beadProject) (*exec.Cmd, *expect.Console, *syncBuffer) {
	t.Helper()
	screen := &syncBuffer{}
	c, err := expect.NewConsole(expect.WithStdout(screen), expect.WithDefaultTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cmd := p.command("run", "ship", "--bead-file", "bead.json")
	cmd.Env = append(cmd.Env, "PAGER=cat")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Tty(), c.Tty(), c.Tty()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = c.Close() })
	return cmd, c, screen
}

// TestFilesACommitHookMadeAreNotCommitted: a pre-commit hook that leaves a
// file behind; the next commit of the steps' work (a second merge) leaves
// that file out, so it never lands on main.
func TestFilesACommitHookMadeAreNotCommitted(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write("bead.json", `{"id":"bd-6","title":"Twice","status":"open"}`)
	p.write(".vibeteam/grimoires/twice.yaml", `name: twice
steps:
  - name: first
    type: script
    command: echo a > a.txt
  - name: merge1
    type: merge
    require_review: false
  - name: second
    type: script
    command: echo b > b.txt
  - name: merge2
    type: merge
    require_review: false
`)
	hook := filepath.Join(p.dir, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho made by pre-commit > hook-made.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := p.exec("run", "twice", "--bead-file", "bead.json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	files := p.git("ls-tree", "-r", "--name-only", "main")
	if strings.Contains(files, "hook-made.txt") || !strings.Contains(files, "a.txt") || !strings.Contains(files, "b.txt") {
		t.Errorf("main has:\n%s", files)
	}
}

// TestBDNoticesDuringARunAreKept: what bd writes on stderr while it
// succeeds (a notice) reaches the user and the event log during a run.
func TestBDNoticesDuringARunAreKept(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-9", "Noticed", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "false"))
	cmd := p.command("run", "ship", "--bead", "bd-9")
	cmd.Env = append(cmd.Env, "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKEBD_DB="+p.db, "FAKEBD_LOG="+p.log, "FAKEBD_NOTICE=Note: database migrated to v9")
	r := runResult(t, cmd)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// show (before the run), update and close (during it): each said so.
	if n := strings.Count(r.stderr, "bd: Note: database migrated to v9"); n < 3 {
		t.Errorf("%d notices shown, want one per bd call (3)\n%s", n, r.stderr)
	}
	warned := 0
	for _, e := range p.events(p.only().ID) {
		if e.Kind() == "warning" && strings.Contains(fmt.Sprint(e.Fields()["warning"]), "database migrated") {
			warned++
		}
	}
	// The claim comes before the session exists (a bead claimed by another
	// is refused before anything is made), so the session's log holds the
	// notices of the calls made during the run: the close.
	if warned < 1 {
		t.Errorf("%d notices in the event log, want the run's (the close)", warned)
	}
}
