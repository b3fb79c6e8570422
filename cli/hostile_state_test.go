package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const oneStage = `id: one
stages:
  - id: s
    tasks:
      - { id: t, adapter: shell, executionMode: headless, prompt: "echo hi" }
`

// TestPruneTouchesOnlySessions: JSON files in the sessions folder that
// vibeteam did not write (any object, a name like a session id) are not
// listed and never pruned.
func TestPruneTouchesOnlySessions(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("wf.yaml", oneStage)
	var strangers []string
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf(".vibeteam/sessions/%08x.json", 0xa0000000+i)
		p.write(name, fmt.Sprintf(`{"id":"%08x","status":"completed","note":"not a session of vibeteam's"}`, 0xa0000000+i))
		strangers = append(strangers, name)
	}
	p.write(".vibeteam/sessions/00000001.json", `{"version":2,"status":"completed"}`)
	strangers = append(strangers, ".vibeteam/sessions/00000001.json")
	for i := 0; i < 3; i++ {
		if r := p.exec("run", "wf.yaml", "--keep-sessions", "1"); r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	}
	for _, f := range strangers {
		if !p.exists(f) {
			t.Errorf("%s was deleted", f)
		}
	}
	if n := len(p.sessions()); n != 1 {
		t.Errorf("%d sessions listed, want the 1 kept", n)
	}
	if r := p.exec("sessions"); strings.Contains(r.stdout, "a0000000") {
		t.Errorf("sessions lists a file vibeteam did not write:\n%s", r.stdout)
	}
}

// TestSymlinkedSessionsFolderIsRefused: a sessions (or logs) folder that is
// a symbolic link is refused with exit 2; nothing behind it is deleted or
// has its mode changed.
func TestSymlinkedSessionsFolderIsRefused(t *testing.T) {
	t.Parallel()
	for _, folder := range []string{"sessions", "logs"} {
		t.Run(folder, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			p.write("wf.yaml", oneStage)
			other := t.TempDir()
			if err := os.Chmod(other, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 60; i++ {
				if err := os.WriteFile(filepath.Join(other, fmt.Sprintf("%08x.json", i)), []byte(`{"a":1}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(p.path(".vibeteam"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, p.path(".vibeteam/"+folder)); err != nil {
				t.Fatal(err)
			}
			r := p.exec("run", "wf.yaml", "--keep-sessions", "1")
			if r.code != 2 || !strings.Contains(r.stderr, "symbolic link") {
				t.Errorf("exit %d, want 2 naming the link\n%s", r.code, r.stderr)
			}
			entries, _ := os.ReadDir(other)
			if len(entries) != 60 {
				t.Errorf("%d files left of 60", len(entries))
			}
			if st, _ := os.Stat(other); st.Mode().Perm() != 0o755 {
				t.Errorf("the linked folder's mode changed to %#o", st.Mode().Perm())
			}
		})
	}
}

// TestSymlinkedWorktreesFolderIsRefused: a .worktrees that is a symbolic
// link is not followed to make a bead's worktree; the link and what it
// points to are left as they are.
func TestSymlinkedWorktreesFolderIsRefused(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write(".vibeteam/grimoires/ship.yaml", fmt.Sprintf(mergeGrimoireYAML, "false"))
	p.write("bead.json", `{"id":"bd-9","title":"Linked","status":"open"}`)
	other := t.TempDir()
	if err := os.Symlink(other, p.path(".worktrees")); err != nil {
		t.Fatal(err)
	}
	r := p.exec("run", "ship", "--bead-file", "bead.json")
	if r.code == 0 || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("a worktree was made through the link: %v", entries)
	}
	if info, err := os.Lstat(p.path(".worktrees")); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was removed or replaced: %v", err)
	}
	if n := len(p.sessions()); n != 0 {
		t.Errorf("%d sessions left by a run that could not start", n)
	}
}

// TestLabelChoosesOnlyFromTheGrimoireFolders: a bead's grimoire:NAME label
// never picks a file of the current directory or a stage workflow's
// folder, only .vibeteam/grimoires (or .coven/grimoires) and the built-ins.
func TestLabelChoosesOnlyFromTheGrimoireFolders(t *testing.T) {
	t.Parallel()
	evil := "name: evil\nsteps:\n  - name: pwn\n    type: script\n    command: touch \"$PWD/../PWNED\"\n"
	p := newBeadProject(t, bead("bd-3", "t", map[string]any{"labels": []any{"grimoire:evil"}}))
	p.write("evil", evil)                          // a file of the checkout
	p.write(".vibeteam/workflows/evil.yaml", evil) // a named stage workflow's folder
	r := p.bdExec("run", "--bead", "bd-3")
	if r.code != 2 || !strings.Contains(r.stderr, "evil") || !strings.Contains(r.stderr, ".vibeteam/grimoires/evil") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	if p.exists("../PWNED") || p.exists(".worktrees/PWNED") {
		t.Error("a file outside the grimoire folders ran")
	}
	p.write(".vibeteam/grimoires/evil.yaml", "name: evil\nsteps:\n  - name: ok\n    type: script\n    command: echo ok\n")
	if r := p.bdExec("run", "--bead", "bd-3"); r.code != 0 {
		t.Errorf("from .vibeteam/grimoires: exit %d\n%s", r.code, r.stderr)
	}
}

// TestCompletedSessionsLeftoversCanBeCleaned: a step after the merge
// leaves a file, so the worktree is kept at the end (with a warning); the
// bead is then owned by a completed session, and cancel --clean --force
// frees it for the next run. Each run's work differs (an empty merge would
// block, nothing_to_merge).
func TestCompletedSessionsLeftoversCanBeCleaned(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write("bead.json", `{"id":"bd-2","title":"Leftover","status":"open"}`)
	p.write(".vibeteam/grimoires/left.yaml", `name: left
steps:
  - name: work
    type: script
    command: date +%s%N > w.txt
  - name: merge
    type: merge
    require_review: false
  - name: after
    type: script
    command: echo scratch > scratch.txt
`)
	r := p.exec("run", "left", "--bead-file", "bead.json")
	if r.code != 0 || !strings.Contains(r.stderr, "remove the worktree") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	id := p.only().ID
	if r := p.exec("run", "left", "--bead-file", "bead.json"); r.code == 0 {
		t.Fatalf("a second run on the bead while its worktree is kept: exit 0\n%s", r.stderr)
	}
	if r := p.exec("cancel", id, "--clean", "--force"); r.code != 0 {
		t.Fatalf("cancel --clean --force of the completed session: exit %d\n%s", r.code, r.stderr)
	}
	if p.exists(".worktrees/bd-2") {
		t.Error("the worktree is still there")
	}
	if r := p.exec("run", "left", "--bead-file", "bead.json"); r.code != 0 {
		t.Errorf("the next run on the bead: exit %d\n%s", r.code, r.stderr)
	}
}
