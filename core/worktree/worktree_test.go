package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var bg = context.Background()

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	write(t, filepath.Join(dir, "sub", "x"), "x")
	r := open(t, filepath.Join(dir, "sub"))
	if r.Top != dir || r.CommonDir != filepath.Join(dir, ".git") {
		t.Fatalf("Open = %+v, want top %s", r, dir)
	}
	if _, err := Open(bg, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not in a git working tree") {
		t.Fatalf("Open outside a repository: %v", err)
	}
}

func TestEnsureCreatesReusesAndGuards(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	// The user's own exclude lines, the last without a newline.
	write(t, filepath.Join(dir, ".git", "info", "exclude"), "# mine\n*.swp")

	wt, created, err := r.Ensure(bg, "bd-1", "", "sess-A")
	if err != nil || !created {
		t.Fatalf("Ensure = %v, %v", created, err)
	}
	want := Worktree{Path: filepath.Join(dir, ".worktrees", "bd-1"), Branch: "vibeteam/bd-1", Base: "main", BeadID: "bd-1", Session: "sess-A"}
	if *wt != want {
		t.Fatalf("Ensure = %+v, want %+v", *wt, want)
	}
	if got := strings.TrimSpace(tgit(t, wt.Path, "symbolic-ref", "HEAD")); got != "refs/heads/vibeteam/bd-1" {
		t.Fatalf("worktree on %s", got)
	}
	if rev(t, wt.Path, "HEAD") != rev(t, dir, "main") {
		t.Fatal("the worktree does not start at the base's HEAD")
	}
	o, err := r.Owner("bd-1")
	if err != nil || o == nil || o.Session != "sess-A" || o.Branch != "vibeteam/bd-1" || o.Base != "main" || o.Path != wt.Path || o.Created.IsZero() {
		t.Fatalf("owner record = %+v, %v", o, err)
	}

	// Resume: the same worktree.
	again, created, err := r.Ensure(bg, "bd-1", "", "sess-A")
	if err != nil || created || *again != want {
		t.Fatalf("second Ensure = %+v, %v, %v", again, created, err)
	}
	if _, _, err := r.Ensure(bg, "bd-1", "main", "sess-A"); err != nil {
		t.Fatalf("Ensure with the recorded base: %v", err)
	}

	// Another session: an error naming the owner and the way out; nothing removed.
	write(t, filepath.Join(wt.Path, "work.txt"), "uncommitted work")
	before := snapshot(t, wt.Path)
	_, _, err = r.Ensure(bg, "bd-1", "", "sess-B")
	var owned *OwnedError
	if !errors.As(err, &owned) || owned.Session != "sess-A" {
		t.Fatalf("Ensure by another session: %v", err)
	}
	for _, s := range []string{"sess-A", "vibeteam cancel sess-A --clean", "vibeteam resume sess-A", wt.Path} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	sameSnap(t, "the other session's worktree", before, snapshot(t, wt.Path))
	if o, _ := r.Owner("bd-1"); o == nil || o.Session != "sess-A" {
		t.Fatalf("owner record changed: %+v", o)
	}

	// info/exclude: both patterns once, the user's lines kept.
	if _, _, err := r.Ensure(bg, "bd-2", "", "sess-B"); err != nil {
		t.Fatal(err)
	}
	if err := r.Exclude(bg, DefaultExcludes...); err != nil {
		t.Fatal(err)
	}
	ex := read(t, filepath.Join(dir, ".git", "info", "exclude"))
	if want := "# mine\n*.swp\n/.worktrees/\n/.vibeteam/\n"; ex != want {
		t.Fatalf("info/exclude = %q, want %q", ex, want)
	}
	write(t, filepath.Join(dir, ".vibeteam", "sessions", "x.json"), "{}")
	if st := tgit(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("git status in the base checkout shows %q", st)
	}
	if gi := read(t, filepath.Join(dir, ".gitignore")); gi != "*.log\n" {
		t.Fatalf(".gitignore changed: %q", gi)
	}
}

func TestEnsureLeftovers(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)

	// A branch nobody owns.
	tgit(t, dir, "branch", "vibeteam/bd-2")
	_, _, err := r.Ensure(bg, "bd-2", "", "sess-A")
	var left *LeftoverError
	if !errors.As(err, &left) || !strings.Contains(err.Error(), "git branch -D vibeteam/bd-2") || !strings.Contains(err.Error(), "no vibeteam session owns") {
		t.Fatalf("Ensure over an unowned branch: %v", err)
	}
	if _, err := tgitErr(dir, "rev-parse", "--verify", "vibeteam/bd-2"); err != nil {
		t.Fatal("the leftover branch was deleted")
	}
	if o, _ := r.Owner("bd-2"); o != nil {
		t.Fatalf("an owner was recorded: %+v", o)
	}

	// A worktree nobody owns, made by hand.
	wtp := filepath.Join(dir, ".worktrees", "bd-3")
	tgit(t, dir, "worktree", "add", "-q", "-b", "vibeteam/bd-3", wtp)
	write(t, filepath.Join(wtp, "mine.txt"), "keep me")
	_, _, err = r.Ensure(bg, "bd-3", "", "sess-A")
	if !errors.As(err, &left) || !strings.Contains(err.Error(), "git worktree remove "+wtp) {
		t.Fatalf("Ensure over an unowned worktree: %v", err)
	}
	if read(t, filepath.Join(wtp, "mine.txt")) != "keep me" {
		t.Fatal("the leftover worktree was touched")
	}

	// A bare directory in the way.
	write(t, filepath.Join(dir, ".worktrees", "bd-4", "x"), "x")
	if _, _, err := r.Ensure(bg, "bd-4", "", "sess-A"); !errors.As(err, &left) {
		t.Fatalf("Ensure over a directory: %v", err)
	}

	// Ids that cannot name a worktree.
	for _, id := range []string{"", "..", "a/b", "a..b", "x.lock"} {
		if _, _, err := r.Ensure(bg, id, "", "sess-A"); err == nil {
			t.Errorf("Ensure(%q) succeeded", id)
		}
	}
}

func TestEnsureBase(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	tgit(t, dir, "branch", "dev")
	commitIn(t, dir, "a.txt", "main moved on\n", "main only")

	if _, _, err := r.Ensure(bg, "bd-1", "nope", "s"); err == nil || !strings.Contains(err.Error(), "base branch nope does not exist") {
		t.Fatalf("missing base: %v", err)
	}
	wt := ensure(t, r, "bd-1", "dev", "s")
	if wt.Base != "dev" || rev(t, wt.Path, "HEAD") != rev(t, dir, "dev") {
		t.Fatalf("worktree %+v not from dev", wt)
	}
	if _, _, err := r.Ensure(bg, "bd-1", "main", "s"); err == nil || !strings.Contains(err.Error(), "merges into dev") {
		t.Fatalf("resume with another base: %v", err)
	}
	if wt, _, err := r.Ensure(bg, "bd-1", "", "s"); err != nil || wt.Base != "dev" {
		t.Fatalf("resume keeps the recorded base: %+v %v", wt, err)
	}

	tgit(t, dir, "checkout", "-q", "--detach")
	if _, err := r.CurrentBranch(bg); err == nil || !strings.Contains(err.Error(), "--base") {
		t.Fatalf("CurrentBranch on a detached HEAD: %v", err)
	}
	if _, _, err := r.Ensure(bg, "bd-2", "", "s"); err == nil || !strings.Contains(err.Error(), "--base BRANCH") {
		t.Fatalf("Ensure on a detached HEAD: %v", err)
	}
}

func TestEnsureChecksOutTheBranchAgain(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "", "s")
	tip := commitIn(t, wt.Path, "a.txt", "agent\n", "agent work")
	if err := os.RemoveAll(wt.Path); err != nil { // removed by hand
		t.Fatal(err)
	}
	again, created, err := r.Ensure(bg, "bd-1", "", "s")
	if err != nil || created || again.Path != wt.Path {
		t.Fatalf("Ensure after the directory was removed: %+v %v %v", again, created, err)
	}
	if rev(t, wt.Path, "HEAD") != tip {
		t.Fatal("the branch's work is not checked out again")
	}
}

func TestCommitAll(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "", "s")

	if made, err := r.CommitAll(bg, wt, "nothing"); err != nil || made {
		t.Fatalf("CommitAll on a clean worktree = %v, %v", made, err)
	}
	commitIn(t, wt.Path, "b.txt", "agent's own commit\n", "agent: own commit")
	write(t, filepath.Join(wt.Path, "a.txt"), "changed, not committed\n")
	write(t, filepath.Join(wt.Path, "new", "file.txt"), "untracked\n")
	write(t, filepath.Join(wt.Path, "debug.log"), "ignored\n")
	write(t, filepath.Join(wt.Path, ".vibeteam", "state.json"), "excluded\n")

	msg := "bd-1: Fix the thing\n\nWork of vibeteam grimoire fix on bead bd-1."
	made, err := r.CommitAll(bg, wt, msg)
	if err != nil || !made {
		t.Fatalf("CommitAll = %v, %v", made, err)
	}
	log := tgit(t, wt.Path, "log", "--format=%s", "main..HEAD")
	if log != "bd-1: Fix the thing\nagent: own commit\n" {
		t.Fatalf("log = %q", log)
	}
	if files := tgit(t, wt.Path, "show", "--name-only", "--format=", "HEAD"); files != "a.txt\nnew/file.txt\n" {
		t.Fatalf("committed %q", files)
	}
	if body := tgit(t, wt.Path, "log", "-1", "--format=%B"); strings.TrimSpace(body) != msg {
		t.Fatalf("message %q", body)
	}
	// No identity is configured here: vibeteam's.
	if who := tgit(t, wt.Path, "log", "-1", "--format=%an <%ae>|%cn <%ce>"); who != "vibeteam <vibeteam@localhost>|vibeteam <vibeteam@localhost>\n" {
		t.Fatalf("identity %q", who)
	}
	if st := tgit(t, wt.Path, "status", "--porcelain"); st != "" {
		t.Fatalf("left %q", st)
	}
	if made, err := r.CommitAll(bg, wt, msg); err != nil || made {
		t.Fatalf("second CommitAll = %v, %v", made, err)
	}

	// A configured identity is the one used.
	tgit(t, dir, "config", "user.name", "Configured")
	tgit(t, dir, "config", "user.email", "me@example.com")
	write(t, filepath.Join(wt.Path, "c.txt"), "more\n")
	if _, err := r.CommitAll(bg, wt, "more"); err != nil {
		t.Fatal(err)
	}
	if who := tgit(t, wt.Path, "log", "-1", "--format=%an <%ae>"); who != "Configured <me@example.com>\n" {
		t.Fatalf("identity %q", who)
	}

	// Not on its branch: refused, nothing committed.
	tgit(t, wt.Path, "checkout", "-q", "--detach")
	write(t, filepath.Join(wt.Path, "c.txt"), "detached\n")
	if _, err := r.CommitAll(bg, wt, "x"); err == nil || !strings.Contains(err.Error(), "not on its branch") {
		t.Fatalf("CommitAll on a detached worktree: %v", err)
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "", "s")
	commitIn(t, wt.Path, "a.txt", "x\n", "first change")
	commitIn(t, wt.Path, "new.txt", "y\n", "second change")
	commitIn(t, dir, "c.txt", "base moved\n", "base only")
	stat, commits, err := r.Summary(bg, wt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stat, "a.txt") || !strings.Contains(stat, "new.txt") || strings.Contains(stat, "c.txt") || !strings.Contains(stat, "2 files changed") {
		t.Fatalf("stat = %q", stat)
	}
	lines := strings.Split(commits, "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "second change") || !strings.HasSuffix(lines[1], "first change") {
		t.Fatalf("commits = %q", commits)
	}
}

// TestMergeBaseNotCheckedOut: the user works on another branch; only the
// base's ref moves, to a merge commit with two parents.
func TestMergeBaseNotCheckedOut(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "main", "s")
	tip := commitIn(t, wt.Path, "a.txt", "agent\n", "agent work")
	tgit(t, dir, "checkout", "-q", "-b", "feature")
	write(t, filepath.Join(dir, "a.txt"), "user's uncommitted edit of the same file\n")
	write(t, filepath.Join(dir, "notes.txt"), "untracked\n")
	oldMain := rev(t, dir, "main")

	before := snapshot(t, dir)
	res, err := r.Merge(bg, wt, "Merge vibeteam/bd-1: the title")
	if err != nil || !res.Merged || res.Commit == "" || res.Refused != "" || len(res.Conflicts) > 0 {
		t.Fatalf("Merge = %+v, %v", res, err)
	}
	after := snapshot(t, dir)
	if rev(t, dir, "main") != res.Commit {
		t.Fatal("main not moved to the merge commit")
	}
	if p := parents(t, dir, res.Commit); len(p) != 2 || p[0] != oldMain || p[1] != tip {
		t.Fatalf("parents %v, want [%s %s]", p, oldMain, tip)
	}
	if msg := tgit(t, dir, "log", "-1", "--format=%B", res.Commit); strings.TrimSpace(msg) != "Merge vibeteam/bd-1: the title" {
		t.Fatalf("message %q", msg)
	}
	// Everything but the main ref is as it was.
	before.Refs = strings.Replace(before.Refs, "refs/heads/main "+oldMain, "refs/heads/main "+res.Commit, 1)
	sameSnap(t, "the user's checkout", before, after)
}

// TestMergeIntoCheckedOutBase: main is checked out in the user's checkout
// with unrelated local changes (modified, staged, untracked, ignored); the
// merge lands and those changes are byte-identical afterwards.
func TestMergeIntoCheckedOutBase(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "", "s")
	tip := commitIn(t, wt.Path, "a.txt", "agent\n", "agent work")
	write(t, filepath.Join(wt.Path, "added.txt"), "added by the agent\n")
	if _, err := r.CommitAll(bg, wt, "bd-1: the rest"); err != nil {
		t.Fatal(err)
	}
	tip = rev(t, wt.Path, "HEAD")
	oldMain := commitIn(t, dir, "c.txt", "user committed on main\n", "user work") // a real merge, not a fast-forward

	write(t, filepath.Join(dir, "b.txt"), "user's uncommitted edit\n")
	write(t, filepath.Join(dir, "c.txt"), "user's staged edit\n")
	tgit(t, dir, "add", "c.txt")
	write(t, filepath.Join(dir, "c.txt"), "user's staged edit, then edited again\n")
	write(t, filepath.Join(dir, "notes.txt"), "untracked notes\n")
	write(t, filepath.Join(dir, "build.log"), "ignored\n")
	before := snapshot(t, dir)
	beforeStatus := tgit(t, dir, "status", "--porcelain=v1", "--untracked-files=all", "--ignored")

	res, err := r.Merge(bg, wt, "Merge vibeteam/bd-1")
	if err != nil || !res.Merged || res.Refused != "" || len(res.Conflicts) > 0 {
		t.Fatalf("Merge = %+v, %v", res, err)
	}
	after := snapshot(t, dir)
	if after.Head != res.Commit || rev(t, dir, "main") != res.Commit || strings.TrimSpace(after.Symref) != "refs/heads/main" {
		t.Fatalf("HEAD %s main %s, want both at %s on main", after.Head, rev(t, dir, "main"), res.Commit)
	}
	if p := parents(t, dir, res.Commit); len(p) != 2 || p[0] != oldMain || p[1] != tip {
		t.Fatalf("parents %v", p)
	}
	if read(t, filepath.Join(dir, "a.txt")) != "agent\n" || read(t, filepath.Join(dir, "added.txt")) != "added by the agent\n" {
		t.Fatal("the merge's files are not in the checkout")
	}
	// The user's files: byte-identical; the status shows exactly the
	// user's changes (the merged files are clean, not staged reverts).
	for _, f := range []string{"b.txt", "c.txt", "notes.txt", "build.log"} {
		if before.Files[f] != after.Files[f] {
			t.Errorf("%s changed", f)
		}
	}
	if st := tgit(t, dir, "status", "--porcelain=v1", "--untracked-files=all", "--ignored"); st != beforeStatus {
		t.Fatalf("status %q, was %q", st, beforeStatus)
	}
	if staged := tgit(t, dir, "diff", "--cached", "--name-only"); staged != "c.txt\n" {
		t.Fatalf("staged %q", staged)
	}
	if msg := tgit(t, dir, "reflog", "-1", "--format=%gs", "main"); !strings.Contains(msg, "vibeteam: merge vibeteam/bd-1") {
		t.Fatalf("reflog %q", msg)
	}
	if _, err := tgitErr(dir, "branch", "--merged", "main", "--list", "vibeteam/bd-1"); err != nil {
		t.Fatal(err)
	}
	if got := tgit(t, dir, "branch", "--merged", "main", "--list", "vibeteam/bd-1"); !strings.Contains(got, "vibeteam/bd-1") {
		t.Fatalf("vibeteam/bd-1 not merged into main: %q", got)
	}
}

// TestMergeRefused: local changes the merge would overwrite make git
// refuse; the result says so and nothing at all changes.
func TestMergeRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		agent string // file the branch changes or adds
		user  string // the user's conflicting local file
		stage bool
	}{
		{"modified", "a.txt", "a.txt", false},
		{"staged", "a.txt", "a.txt", true},
		{"untracked", "new.txt", "new.txt", false},
		{"ignored", "keep.log", "keep.log", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t)
			r := open(t, dir)
			wt := ensure(t, r, "bd-1", "", "s")
			write(t, filepath.Join(wt.Path, tc.agent), "agent\n")
			tgit(t, wt.Path, "add", "-f", tc.agent)
			tgit(t, wt.Path, "commit", "-q", "-m", "agent")
			commitIn(t, dir, "c.txt", "base moved\n", "user work")

			write(t, filepath.Join(dir, tc.user), "the user's precious local change\n")
			if tc.stage {
				tgit(t, dir, "add", tc.user)
			}
			write(t, filepath.Join(dir, "b.txt"), "unrelated edit\n")
			write(t, filepath.Join(dir, "notes.txt"), "untracked\n")
			before := snapshot(t, dir)
			beforeWt := snapshot(t, wt.Path)

			res, err := r.Merge(bg, wt, "Merge vibeteam/bd-1")
			if err != nil {
				t.Fatal(err)
			}
			if res.Merged || len(res.Conflicts) > 0 || !strings.Contains(res.Refused, "would be overwritten by merge") || !strings.Contains(res.Refused, tc.user) {
				t.Fatalf("Merge = %+v", res)
			}
			sameSnap(t, "the user's checkout", before, snapshot(t, dir))
			sameSnap(t, "the bead's worktree", beforeWt, snapshot(t, wt.Path))
		})
	}
}

// TestMergeConflict: base and branch change the same line: the conflict
// is reported with both sides and nothing changes anywhere.
func TestMergeConflict(t *testing.T) {
	t.Parallel()
	for _, checkedOut := range []bool{true, false} {
		name := "base checked out"
		if !checkedOut {
			name = "base not checked out"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t)
			r := open(t, dir)
			wt := ensure(t, r, "bd-1", "", "s")
			write(t, filepath.Join(wt.Path, "a.txt"), "one\nAGENT'S LINE\nthree\na.txt\n")
			write(t, filepath.Join(wt.Path, "b.txt"), "agent edits b\n")
			if _, err := r.CommitAll(bg, wt, "agent"); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "a.txt"), "one\nUSER'S LINE\nthree\na.txt\n")
			tgit(t, dir, "rm", "-q", "b.txt")
			tgit(t, dir, "commit", "-q", "-am", "user")
			if !checkedOut {
				tgit(t, dir, "checkout", "-q", "-b", "elsewhere")
			}
			write(t, filepath.Join(dir, "c.txt"), "unrelated local edit\n")
			write(t, filepath.Join(dir, "notes.txt"), "untracked\n")
			before, beforeWt := snapshot(t, dir), snapshot(t, wt.Path)

			res, err := r.Merge(bg, wt, "Merge vibeteam/bd-1")
			if err != nil {
				t.Fatal(err)
			}
			if res.Merged || res.Refused != "" || len(res.Conflicts) != 2 {
				t.Fatalf("Merge = %+v", res)
			}
			a, b := res.Conflicts[0], res.Conflicts[1]
			if a.Path != "a.txt" || b.Path != "b.txt" {
				t.Fatalf("conflicts in %s, %s", a.Path, b.Path)
			}
			for _, s := range []string{"<<<<<<< main\n", "USER'S LINE\n", "=======\n", "AGENT'S LINE\n", ">>>>>>> vibeteam/bd-1\n", "one\n"} {
				if !strings.Contains(a.Hunks, s) {
					t.Errorf("hunks of a.txt lack %q:\n%s", s, a.Hunks)
				}
			}
			if !strings.Contains(b.Hunks, "modify/delete") || !strings.Contains(b.Message, "deleted in") {
				t.Errorf("b.txt: %+v", b)
			}
			sameSnap(t, "the user's checkout", before, snapshot(t, dir))
			sameSnap(t, "the bead's worktree", beforeWt, snapshot(t, wt.Path))
		})
	}
}

func TestMergeUpToDate(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "", "s")
	commitIn(t, dir, "c.txt", "moved\n", "user")
	before := snapshot(t, dir)
	res, err := r.Merge(bg, wt, "Merge")
	// main went through the branch's tip (it has no commit of its own):
	// that commit brought it in.
	if err != nil || !res.Merged || !res.UpToDate || res.Commit != rev(t, dir, "main~1") {
		t.Fatalf("Merge = %+v, %v", res, err)
	}
	sameSnap(t, "the user's checkout", before, snapshot(t, dir))
}

// TestUpToDateRecordsTheMergeThatBroughtIt: a bead's branch merged, then
// the base moved on (another bead's merge, a commit of the user's); its
// merge asked again (a resume after a kill that came before its session
// recorded it) is up to date, and its commit is the bead's own merge, not
// the base's tip — through MergeWith, a Batcher, and Landed.
func TestUpToDateRecordsTheMergeThatBroughtIt(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt1 := ensure(t, r, "bd-1", "main", "s")
	commitIn(t, wt1.Path, "one.txt", "1\n", "work 1")
	wt2 := ensure(t, r, "bd-2", "main", "s")
	commitIn(t, wt2.Path, "two.txt", "2\n", "work 2")
	first, err := r.Merge(bg, wt1, "Merge bd-1")
	if err != nil || !first.Merged {
		t.Fatalf("Merge = %+v, %v", first, err)
	}
	commitIn(t, dir, "user.txt", "u\n", "the user's commit")
	if res, err := r.Merge(bg, wt2, "Merge bd-2"); err != nil || !res.Merged {
		t.Fatalf("Merge bd-2 = %+v, %v", res, err)
	}
	if tipNow := rev(t, dir, "main"); tipNow == first.Commit {
		t.Fatal("main did not move past bd-1's merge")
	}
	again, err := r.Merge(bg, wt1, "Merge bd-1")
	if err != nil || !again.UpToDate || again.Commit != first.Commit {
		t.Errorf("MergeWith again = %+v, %v; want up to date at bd-1's merge %s", again, err, first.Commit)
	}
	results, errs := queueAll(t, r.NewBatcher(4), []MergeItem{{Worktree: wt1, Message: "Merge bd-1"}})
	if errs[0] != nil || !results[0].UpToDate || results[0].Commit != first.Commit {
		t.Errorf("Batcher = %+v, %v; want up to date at bd-1's merge %s", results[0], errs[0], first.Commit)
	}
	if commit, ok, err := r.Landed(bg, wt1); err != nil || !ok || commit != first.Commit {
		t.Errorf("Landed = %s, %v, %v; want bd-1's merge %s", commit, ok, err, first.Commit)
	}
}

// TestMergeRefusedWhileRebasing: a base being rebased is detached in git
// worktree list, but must not be moved under the rebase.
func TestMergeRefusedWhileRebasing(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "", "s")
	commitIn(t, wt.Path, "a.txt", "agent\n", "agent")
	tgit(t, dir, "branch", "up")
	commitIn(t, dir, "b.txt", "main\n", "main b")
	tgit(t, dir, "checkout", "-q", "up")
	commitIn(t, dir, "b.txt", "up\n", "up b")
	tgit(t, dir, "checkout", "-q", "main")
	if _, err := tgitErr(dir, "rebase", "up"); err == nil {
		t.Fatal("the rebase did not stop")
	}
	before := snapshot(t, dir)
	res, err := r.Merge(bg, wt, "Merge")
	if err != nil || !strings.Contains(res.Refused, "being rebased") {
		t.Fatalf("Merge = %+v, %v", res, err)
	}
	sameSnap(t, "the user's checkout", before, snapshot(t, dir))
}

func TestRemove(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)

	// Merged: removed without force.
	wt := ensure(t, r, "bd-1", "", "s")
	commitIn(t, wt.Path, "a.txt", "agent\n", "agent")
	if res, err := r.Merge(bg, wt, "Merge"); err != nil || !res.Merged {
		t.Fatalf("Merge = %+v, %v", res, err)
	}
	if err := r.Remove(bg, wt, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
	if _, err := tgitErr(dir, "rev-parse", "--verify", "vibeteam/bd-1"); err == nil {
		t.Fatal("branch still there")
	}
	if o, _ := r.Owner("bd-1"); o != nil {
		t.Fatalf("owner record still there: %+v", o)
	}
	if err := r.Remove(bg, wt, false); err != nil {
		t.Fatalf("Remove again: %v", err)
	}

	// Merged, removed by hand: git branch -d accepts the branch.
	wt5 := ensure(t, r, "bd-5", "", "s")
	commitIn(t, wt5.Path, "c.txt", "agent5\n", "agent5")
	if res, err := r.Merge(bg, wt5, "Merge 5"); err != nil || !res.Merged {
		t.Fatalf("Merge = %+v, %v", res, err)
	}
	tgit(t, dir, "worktree", "remove", wt5.Path)
	tgit(t, dir, "branch", "-d", "vibeteam/bd-5")

	// Not merged: refused without force, nothing removed; force removes.
	wt2 := ensure(t, r, "bd-2", "", "s")
	commitIn(t, wt2.Path, "b.txt", "unmerged\n", "unmerged")
	before := snapshot(t, wt2.Path)
	if err := r.Remove(bg, wt2, false); err == nil || !strings.Contains(err.Error(), "1 commit(s) not merged into main") {
		t.Fatalf("Remove unmerged: %v", err)
	}
	sameSnap(t, "the unmerged worktree", before, snapshot(t, wt2.Path))
	if o, _ := r.Owner("bd-2"); o == nil {
		t.Fatal("owner record removed")
	}
	if err := r.Remove(bg, wt2, true); err != nil {
		t.Fatal(err)
	}
	if _, err := tgitErr(dir, "rev-parse", "--verify", "vibeteam/bd-2"); err == nil {
		t.Fatal("forced: branch still there")
	}

	// Uncommitted work: git refuses without force.
	wt3 := ensure(t, r, "bd-3", "", "s")
	write(t, filepath.Join(wt3.Path, "wip.txt"), "work in progress\n")
	if err := r.Remove(bg, wt3, false); err == nil || !strings.Contains(err.Error(), "untracked") {
		t.Fatalf("Remove with untracked files: %v", err)
	}
	if read(t, filepath.Join(wt3.Path, "wip.txt")) != "work in progress\n" {
		t.Fatal("uncommitted work lost")
	}

	// Another session's worktree is not removed.
	other := *wt3
	other.Session = "intruder"
	if err := r.Remove(bg, &other, true); err == nil || !strings.Contains(err.Error(), "owned by session s") {
		t.Fatalf("Remove by another session: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wt3.Path, "wip.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentMerges: two beads merged at once into one base both land;
// the lock makes the second merge start from the first's result.
func TestConcurrentMerges(t *testing.T) {
	t.Parallel()
	for _, checkedOut := range []bool{true, false} {
		name := "base checked out"
		if !checkedOut {
			name = "base not checked out"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := newRepo(t)
			const n = 4
			var wts []*Worktree
			for i := range n {
				// Each its own Repo, as separate vibeteam processes would have.
				id := "bd-" + string(rune('a'+i))
				wt := ensure(t, open(t, dir), id, "main", "s-"+id)
				commitIn(t, wt.Path, id+".txt", id+"\n", "work on "+id)
				wts = append(wts, wt)
			}
			if !checkedOut {
				tgit(t, dir, "checkout", "-q", "-b", "elsewhere")
			}
			start := make(chan struct{})
			results := make([]MergeResult, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, wt := range wts {
				r := open(t, dir)
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					results[i], errs[i] = r.Merge(bg, wt, "Merge "+wt.Branch)
				}()
			}
			close(start)
			wg.Wait()
			for i := range n {
				if errs[i] != nil || !results[i].Merged {
					t.Fatalf("merge %d: %+v, %v", i, results[i], errs[i])
				}
			}
			merges := strings.Fields(tgit(t, dir, "rev-list", "--first-parent", "--merges", "main"))
			if len(merges) != n {
				t.Fatalf("%d merge commits on main, want %d", len(merges), n)
			}
			files := tgit(t, dir, "ls-tree", "--name-only", "main")
			for _, wt := range wts {
				if !strings.Contains(files, wt.BeadID+".txt\n") {
					t.Errorf("main lacks %s.txt: %q", wt.BeadID, files)
				}
				if checkedOut {
					if _, err := os.Stat(filepath.Join(dir, wt.BeadID+".txt")); err != nil {
						t.Error(err)
					}
				}
			}
			if st := tgit(t, dir, "status", "--porcelain"); st != "" {
				t.Fatalf("status %q", st)
			}
		})
	}
}

func TestHunksBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("ctx\n")
	for range 100 {
		b.WriteString("<<<<<<< OLD\nours\n=======\ntheirs\n>>>>>>> TIP\nbetween\nbetween\nbetween\nbetween\n")
	}
	h := hunks(b.String(), "OLD", "TIP", "main", "vibeteam/x")
	if n := strings.Count(h, "\n"); n > maxHunkLines+2 {
		t.Fatalf("%d lines", n)
	}
	if !strings.HasPrefix(h, "ctx\n<<<<<<< main\nours\n") || !strings.Contains(h, ">>>>>>> vibeteam/x\n") || !strings.Contains(h, "not shown") {
		t.Fatalf("hunks:\n%s", h)
	}
}

// TestConflictResolvedInTheWorktree: the way out of a conflict the engine
// offers: merge the base into the worktree, resolve, commit, merge again.
func TestConflictResolvedInTheWorktree(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "", "s")
	commitIn(t, wt.Path, "a.txt", "agent\n", "agent")
	commitIn(t, dir, "a.txt", "user\n", "user")
	if res, err := r.Merge(bg, wt, "Merge"); err != nil || len(res.Conflicts) != 1 {
		t.Fatalf("Merge = %+v, %v", res, err)
	}
	if _, err := tgitErr(wt.Path, "merge", "main"); err == nil {
		t.Fatal("merging main into the worktree did not conflict")
	}
	// Unresolved: CommitAll refuses to commit conflict markers.
	before := snapshot(t, wt.Path)
	if _, err := r.CommitAll(bg, wt, "resolved"); err == nil || !strings.Contains(err.Error(), "unresolved conflicts in a.txt") {
		t.Fatalf("CommitAll with conflicts: %v", err)
	}
	sameSnap(t, "the worktree", before, snapshot(t, wt.Path))
	write(t, filepath.Join(wt.Path, "a.txt"), "agent and user\n")
	tgit(t, wt.Path, "add", "a.txt")
	if made, err := r.CommitAll(bg, wt, "bd-1: resolved"); err != nil || !made {
		t.Fatalf("CommitAll = %v, %v", made, err)
	}
	if p := parents(t, wt.Path, "HEAD"); len(p) != 2 {
		t.Fatalf("the resolution is not a merge commit: %v", p)
	}
	res, err := r.Merge(bg, wt, "Merge again")
	if err != nil || !res.Merged {
		t.Fatalf("Merge after the resolution = %+v, %v", res, err)
	}
	if read(t, filepath.Join(dir, "a.txt")) != "agent and user\n" {
		t.Fatal("the resolution is not in the checkout")
	}
}

// TestLockWaitsForTheHolder: a second run waits for the lock, until its
// context ends.
func TestLockWaitsForTheHolder(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	_, unlock, err := r.lock(bg)
	if err != nil {
		t.Fatal(err)
	}
	r2, r3 := open(t, dir), open(t, dir)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- r2.Exclude(ctx, "/x/") }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Exclude while locked: %v", err)
	}
	go func() { done <- r3.Exclude(bg, "/x/") }()
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ex := read(t, filepath.Join(dir, ".git", "info", "exclude")); !strings.HasSuffix(ex, "\n/x/\n") {
		t.Fatalf("exclude %q", ex)
	}
}

// TestEnsureStaleRecord: a record of another session with neither worktree
// nor branch (a run killed between the two) guards no work: taken over.
func TestEnsureStaleRecord(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	if err := r.writeOwner("bd-1", Owner{Session: "dead", Branch: "vibeteam/bd-1", Base: "main", Path: filepath.Join(dir, ".worktrees", "bd-1")}); err != nil {
		t.Fatal(err)
	}
	wt := ensure(t, r, "bd-1", "", "alive")
	if o, err := r.Owner("bd-1"); err != nil || o.Session != "alive" || wt.Session != "alive" {
		t.Fatalf("owner %+v, %v", o, err)
	}
}

// TestSlowCommitHoldsUpNoOtherBead: one bead's commit hook that takes its
// time holds up neither another bead's worktree, commit and merge nor that
// bead's removal; the first bead's commit still ends with its work.
func TestSlowCommitHoldsUpNoOtherBead(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	started, release := filepath.Join(t.TempDir(), "started"), filepath.Join(t.TempDir(), "release")
	for _, p := range []string{started, release} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The hook of bead bd-1's commit says it started, then waits to be
	// let go; other beads' commits pass.
	write(t, filepath.Join(dir, ".git", "hooks", "pre-commit"), fmt.Sprintf("#!/bin/sh\ncase \"$PWD\" in */bd-1) echo go > %s; read x < %s;; esac\n", started, release))
	if err := os.Chmod(filepath.Join(dir, ".git", "hooks", "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	slow := ensure(t, r, "bd-1", "", "s1")
	write(t, filepath.Join(slow.Path, "slow.txt"), "slow\n")
	committed := make(chan error, 1)
	go func() {
		_, err := r.CommitAll(bg, slow, "bd-1: slow")
		committed <- err
	}()
	// Until the hook runs (read whole, so its echo is not cut short).
	if _, err := os.ReadFile(started); err != nil {
		t.Fatal(err)
	}
	let := func() error {
		done := make(chan error, 1)
		go func() {
			w, err := os.OpenFile(release, os.O_WRONLY, 0)
			if err == nil {
				_, err = w.WriteString("\n")
				w.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("the hook no longer waits")
		}
	}
	released := false
	defer func() {
		if !released {
			let()
		}
	}()

	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	fast, _, err := r.Ensure(ctx, "bd-2", "", "s2")
	if err != nil {
		t.Fatalf("Ensure while another bead commits: %v", err)
	}
	write(t, filepath.Join(fast.Path, "fast.txt"), "fast\n")
	if made, err := r.CommitAll(ctx, fast, "bd-2: fast"); err != nil || !made {
		t.Fatalf("CommitAll while another bead commits: %v, %v", made, err)
	}
	if res, err := r.Merge(ctx, fast, "merge bd-2"); err != nil || !res.Merged {
		t.Fatalf("Merge while another bead commits: %+v, %v", res, err)
	}
	if err := r.Remove(ctx, fast, false); err != nil {
		t.Fatalf("Remove while another bead commits: %v", err)
	}
	if got := read(t, filepath.Join(dir, "fast.txt")); got != "fast\n" {
		t.Fatalf("fast.txt in the checkout: %q", got)
	}

	released = true
	if err := let(); err != nil {
		t.Fatal(err)
	}
	if err := <-committed; err != nil {
		t.Fatalf("the slow commit: %v", err)
	}
	if files := tgit(t, slow.Path, "show", "--name-only", "--format=", "HEAD"); files != "slow.txt\n" {
		t.Fatalf("the slow commit holds %q", files)
	}
}

// TestBeadIDsAsGitSeesThem: the bead ids refused as branch names are the
// ones git check-ref-format refuses.
func TestBeadIDsAsGitSeesThem(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	for _, id := range []string{"bd-1", "x.y", "a..b", ".hidden", "end.", "x.lock", "a@{1}", "@", "a@b", "sp ace", "ti~lde", "ca^ret", "co:lon",
		"qu?estion", "st*ar", "br[acket", "back\\slash", "tab\tbed", "del\x7f", "ünïcode", "-dash", "a.lock.b", "x@", "emoji-🙂", "nl\nx"} {
		_, gitErr := tgitErr(dir, "check-ref-format", "refs/heads/"+BranchPrefix+id)
		ours := checkBeadID(id)
		if (gitErr == nil) != (ours == nil) {
			t.Errorf("bead id %q: git check-ref-format says %v, vibeteam says %v", id, gitErr, ours)
		}
	}
}

// TestConcurrentLifecycles: beads made, committed to, merged and removed
// all at once, each through a Repo of its own as separate vibeteam
// processes would: every step of every bead succeeds (git worktree add,
// list and remove fail on a worktree another git is half-way through
// making or removing, so those must never overlap), and main ends with
// every bead's file and no worktree or branch left.
func TestConcurrentLifecycles(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	const n, rounds = 8, 3
	var wg sync.WaitGroup
	errs := make(chan error, n*rounds)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range rounds {
				id := fmt.Sprintf("bd-%d-%d", i, round)
				r, err := Open(bg, dir)
				if err != nil {
					errs <- err
					return
				}
				wt, _, err := r.Ensure(bg, id, "main", "s-"+id)
				if err != nil {
					errs <- fmt.Errorf("%s: Ensure: %w", id, err)
					return
				}
				if err := os.WriteFile(filepath.Join(wt.Path, id+".txt"), []byte(id+"\n"), 0o644); err != nil {
					errs <- err
					return
				}
				if made, err := r.CommitAll(bg, wt, "work on "+id); err != nil || !made {
					errs <- fmt.Errorf("%s: CommitAll: %v, %w", id, made, err)
					return
				}
				if res, err := r.Merge(bg, wt, "Merge "+id); err != nil || !res.Merged {
					errs <- fmt.Errorf("%s: Merge: %+v, %w", id, res, err)
					return
				}
				if err := r.Remove(bg, wt, false); err != nil {
					errs <- fmt.Errorf("%s: Remove: %w", id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	files := tgit(t, dir, "ls-tree", "--name-only", "main")
	for i := range n {
		for round := range rounds {
			if id := fmt.Sprintf("bd-%d-%d", i, round); !strings.Contains(files, id+".txt\n") {
				t.Errorf("main lacks %s.txt", id)
			}
		}
	}
	if wts := tgit(t, dir, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", wts)
	}
	if branches := tgit(t, dir, "branch", "--list", "vibeteam/*"); branches != "" {
		t.Errorf("branches left: %q", branches)
	}
	if st := tgit(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("status %q", st)
	}
}

// TestLandAfterTheCheckoutSwitched: the checkout that had the base when
// the merge queued switched to another branch before it landed: the base
// moves as a branch checked out nowhere, and the other branch and the
// checkout's files stay as they are.
func TestLandAfterTheCheckoutSwitched(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "", "s")
	commitIn(t, wt.Path, "a.txt", "bead\n", "bead's work")
	list, err := r.worktrees(bg)
	if err != nil {
		t.Fatal(err)
	}
	seen := findBranch(list, "refs/heads/main")
	if len(seen) != 1 {
		t.Fatalf("main is checked out in %+v", seen)
	}
	id, err := identity(bg, dir)
	if err != nil {
		t.Fatal(err)
	}
	m, res, err := r.prepare(bg, wt, "Merge bd-1", id)
	if err != nil || m == nil {
		t.Fatalf("prepare: %+v, %v", res, err)
	}
	tgit(t, dir, "checkout", "-q", "-b", "other")
	before := snapshot(t, dir)
	res, moved, err := r.land(bg, wt, m, seen)
	if err != nil || moved || !res.Merged {
		t.Fatalf("land: %+v, moved %v, %v", res, moved, err)
	}
	if got := rev(t, dir, "main"); got != m.commit {
		t.Fatalf("main is at %s, not at the merge %s", got, m.commit)
	}
	after := snapshot(t, dir)
	before.Refs, after.Refs = "", "" // main moved, as it should
	sameSnap(t, "the checkout on other", before, after)
	if got := rev(t, dir, "other"); got != m.old {
		t.Fatalf("other moved to %s", got)
	}
}
