package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// waitLong waits for cond, with a bound generous for a loaded machine.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in 90s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdingGit is a directory with a git that runs the real one, then, when
// it has just landed a merge on main (the checkout's fast-forward, or the
// ref's move), says so (the file landed in marks) and waits for the file go
// there before it returns: the moment between git landing the merge and
// vibeteam hearing of it, held open.
func holdingGit(t *testing.T, marks string) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
'%s' "$@"
rc=$?
case " $* " in
*" merge --ff-only "*|*" update-ref "*refs/heads/main*)
	touch '%s/landed'
	while [ ! -e '%s/go' ]; do sleep 0.05; done ;;
esac
exit $rc
`, real, marks, marks)
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCancelDuringALandingMergeCompletes: `vibeteam cancel` (SIGTERM to the
// running vibeteam) comes while git lands the merge. Git landed it, so the
// session is completed, never cancelled: its note says a cancel came during
// the merge and names the step after it that did not run; the bead is
// closed, the merged commit recorded, the worktree removed; the run exits 0
// and cancel says it came too late. show offers nothing git contradicts.
func TestCancelDuringALandingMergeCompletes(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t, bead("bd-5", "Raced", nil))
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "false"))
	marks := t.TempDir()
	env := []string{
		"PATH=" + holdingGit(t, marks) + string(os.PathListSeparator) + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log,
	}
	run := p.command("run", "ship", "--bead", "bd-5")
	run.Env = append(run.Env, env...)
	runErr := &syncBuffer{}
	run.Stderr = runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan int, 1)
	go func() { runDone <- exitCode(run.Wait()) }()
	waitLong(t, "git landing the merge", func() bool { _, err := os.Stat(filepath.Join(marks, "landed")); return err == nil })
	id := onlySessionID(t, p.project)

	cancel := p.command("cancel", id)
	cancel.Env = append(cancel.Env, env...)
	cancelErr := &syncBuffer{}
	cancel.Stderr = cancelErr
	if err := cancel.Start(); err != nil {
		t.Fatal(err)
	}
	cancelDone := make(chan int, 1)
	go func() { cancelDone <- exitCode(cancel.Wait()) }()
	waitLong(t, "cancel sending its SIGTERM", func() bool { return strings.Contains(cancelErr.String(), "stopping session") })
	// The SIGTERM came while git held the merge; now git ends.
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var runCode, cancelCode int
	select {
	case runCode = <-runDone:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not end\n%s", runErr.String())
	}
	cancelCode = <-cancelDone
	t.Logf("run:\n%s\ncancel:\n%s", runErr.String(), cancelErr.String())

	main := p.git("rev-parse", "main")
	s := p.sessionByID(id)
	if s.Status != state.StatusCompleted || s.Merged != main {
		t.Errorf("status %s merged %q, want completed at main's %s", s.Status, s.Merged, main)
	}
	if !strings.Contains(s.Note, "a cancel came during the merge") || !strings.Contains(s.Note, "did not run: after") {
		t.Errorf("note %q", s.Note)
	}
	if runCode != 0 || !strings.Contains(runErr.String(), "note: a cancel came during the merge") {
		t.Errorf("run: exit %d, want 0 with the note", runCode)
	}
	if cancelCode != 0 || !strings.Contains(cancelErr.String(), "completed before the cancel could stop it") {
		t.Errorf("cancel: exit %d, want 0 saying it came too late", cancelCode)
	}
	if st := p.dbStatus("bd-5"); st != "closed" {
		t.Errorf("bead bd-5 is %s, want closed", st)
	}
	if calls := strings.Join(p.bdCalls(), "\n"); strings.Contains(calls, "--status open") {
		t.Errorf("the bead was set open:\n%s", calls)
	}
	if p.exists(".worktrees/bd-5") || p.git("branch", "--list", "vibeteam/*") != "" {
		t.Error("the merged worktree or branch is left")
	}
	showAgreesWithGit(t, p, id)
}

// showAgreesWithGit: show of a session whose merge landed offers no retry
// of it, no bead going back to open, no worktree as if it were there.
func showAgreesWithGit(t *testing.T, p *beadProject, id string) {
	t.Helper()
	r := p.exec("show", id)
	if r.code != 0 {
		t.Fatalf("show: exit %d\n%s", r.code, r.stderr)
	}
	for _, bad := range []string{"retry", "back to open", "merges into"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("show says %q:\n%s", bad, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "note      a cancel came during the merge") || !strings.Contains(r.stdout, ", removed (branch") {
		t.Errorf("show does not give the note, or that the worktree was removed:\n%s", r.stdout)
	}
}
