package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// pushedBranches makes branches in p, each adding (or changing) a file,
// pushes them to a bare origin and deletes them locally: what matrix jobs
// leave behind.
func pushedBranches(t *testing.T, p *beadProject, files map[string]string) {
	t.Helper()
	origin := filepath.Join(t.TempDir(), "origin.git")
	p.git("init", "-q", "--bare", origin)
	p.git("remote", "add", "origin", origin)
	p.git("push", "-q", "origin", "main")
	for branch, file := range files {
		name, content, _ := strings.Cut(file, "=")
		p.git("switch", "-q", "-c", branch, "main")
		p.write(name, content+"\n")
		p.git("add", name)
		p.git("commit", "-q", "-m", "work on "+branch)
		p.git("push", "-q", "origin", branch)
		p.git("switch", "-q", "main")
		p.git("branch", "-q", "-D", branch)
	}
	p.git("fetch", "-q", "origin")
}

// land merges pushed branches one at a time through the gate: a red one
// and a conflicting one are left out (exit 3), the others land in order,
// each gate seeing the ones landed before it.
func TestLandPushedBranches(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	pushedBranches(t, p, map[string]string{
		"jobs/a": "a.txt=a", "jobs/b": "b.txt=b", "jobs/bad": "bad.txt=x", "jobs/clash": "README=theirs",
	})
	p.write("README", "hello\nmine\n")
	p.git("commit", "-q", "-am", "the base changes README")
	p.write("notes.txt", "untracked, mine\n")
	mainBefore := p.git("rev-parse", "main")

	r := p.exec("land", "origin/jobs/a", "origin/jobs/bad", "origin/jobs/clash", "origin/jobs/b",
		"--gate", "ls > seen-$(basename $VIBETEAM_GATE_BRANCH).list; cp seen-*.list "+p.dir+"/ ; if [ -f bad.txt ]; then echo '--- FAIL: TestBad'; exit 1; fi")
	wantCode(t, r, 3)
	for _, want := range []string{
		"landing 4 branch(es) on main",
		"  batch of 3 (origin/jobs/a, origin/jobs/bad, origin/jobs/b): gate on main at ",
		"✓ origin/jobs/a: landed on main as ",
		"✗ origin/jobs/bad: not landed: gate red (exit 1) after",
		"  | --- FAIL: TestBad",
		"✗ origin/jobs/clash: not landed: it conflicts with main in README",
		"✓ origin/jobs/b: landed on main as ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	files := p.git("ls-tree", "--name-only", "main")
	if !strings.Contains(files, "a.txt") || !strings.Contains(files, "b.txt") || strings.Contains(files, "bad.txt") {
		t.Fatalf("main has %q", files)
	}
	if got := p.git("show", "main:README"); got != "hello\nmine" {
		t.Fatalf("main:README = %q", got)
	}
	// In order, one on top of the other: b's gate saw a's file.
	if merges := strings.Fields(p.git("rev-list", "--first-parent", "--merges", mainBefore+"..main")); len(merges) != 2 {
		t.Fatalf("%d merges landed", len(merges))
	}
	if !strings.Contains(p.read("seen-b.list"), "a.txt") {
		t.Fatalf("b's gate did not see a's landed work:\n%s", p.read("seen-b.list"))
	}
	// The checkout was updated as git merge would, the user's file kept,
	// and no gate worktree is left.
	if p.read("notes.txt") != "untracked, mine\n" || !p.exists("a.txt") || !p.exists("b.txt") {
		t.Fatal("the checkout was not updated, or lost the user's file")
	}
	if left := gateDirsLeft(p); left != "" {
		t.Fatalf("gate worktree left: %s", left)
	}

	// Again: what landed is already in main; the others still do not land.
	r = p.exec("land", "origin/jobs/a", "--no-gate")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "✓ origin/jobs/a: already in main") {
		t.Errorf("output:\n%s", r.stdout)
	}
	// An unknown branch: nothing lands.
	before := p.git("rev-parse", "main")
	r = p.exec("land", "origin/jobs/bad", "origin/nope", "--no-gate")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "no branch origin/nope") || p.git("rev-parse", "main") != before {
		t.Fatalf("stderr %q; main %s, was %s", r.stderr, p.git("rev-parse", "main"), before)
	}
	// config.yaml's gate is the default.
	p.write(".vibeteam/config.yaml", "merge:\n  gate: test ! -f bad.txt\n")
	r = p.exec("land", "origin/jobs/bad")
	wantCode(t, r, 3)
	if !strings.Contains(r.stdout, "each checked by: test ! -f bad.txt") || p.git("rev-parse", "main") != before {
		t.Fatalf("output:\n%s", r.stdout)
	}
}
