package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateSeen is what a gate saw: its worktree and the files there.
type gateSeen struct {
	dir   string
	try   GateTry
	files string
	head  string
}

func see(t *testing.T, dir string, try GateTry) gateSeen {
	return gateSeen{dir: dir, try: try, files: tgit(t, dir, "ls-files"), head: strings.TrimSpace(tgit(t, dir, "rev-parse", "HEAD"))}
}

// A red gate leaves the base (and the user's checkout) as they were, and
// its worktree is gone; a green one lands the exact commit it checked.
func TestGateRedAndGreen(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "main", "s")
	commitIn(t, wt.Path, "new.txt", "agent\n", "agent work")
	before := snapshot(t, dir)

	var seen []gateSeen
	red := func(ctx context.Context, gdir string, try GateTry) (bool, error) {
		seen = append(seen, see(t, gdir, try))
		return false, nil
	}
	res, err := r.MergeWith(bg, wt, "Merge", MergeOptions{Gate: red})
	if err != nil || !res.GateRed || res.Merged || res.Commit == "" {
		t.Fatalf("red gate: %+v, %v", res, err)
	}
	sameSnap(t, "the checkout after a red gate", before, snapshot(t, dir))
	if len(seen) != 1 || seen[0].head != res.Commit || !strings.Contains(seen[0].files, "new.txt") {
		t.Fatalf("the gate saw %+v; the merge commit is %s", seen, res.Commit)
	}
	if _, err := os.Stat(seen[0].dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the gate's worktree %s is still there: %v", seen[0].dir, err)
	}
	if list := tgit(t, dir, "worktree", "list"); strings.Contains(list, gatePrefix) {
		t.Fatalf("git still lists the gate's worktree:\n%s", list)
	}

	seen = nil
	green := func(ctx context.Context, gdir string, try GateTry) (bool, error) {
		seen = append(seen, see(t, gdir, try))
		return true, nil
	}
	res, err = r.MergeWith(bg, wt, "Merge", MergeOptions{Gate: green})
	if err != nil || !res.Merged || res.Attempts != 1 {
		t.Fatalf("green gate: %+v, %v", res, err)
	}
	if len(seen) != 1 || seen[0].head != res.Commit || rev(t, dir, "main") != res.Commit || seen[0].try.BaseCommit != before.Head {
		t.Fatalf("the gate checked %+v, main is %s, landed %s", seen, rev(t, dir, "main"), res.Commit)
	}
}

// The base moves while the gate runs (the user commits): the merge is
// computed again on the new base and checked again, then lands with both.
func TestGateBaseMovesDuringTheGate(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "main", "s")
	commitIn(t, wt.Path, "new.txt", "agent\n", "agent work")

	var seen []gateSeen
	var user string
	gate := func(ctx context.Context, gdir string, try GateTry) (bool, error) {
		seen = append(seen, see(t, gdir, try))
		if try.Attempt == 1 {
			user = commitIn(t, dir, "user.txt", "mine\n", "the user's commit")
		}
		return true, nil
	}
	res, err := r.MergeWith(bg, wt, "Merge", MergeOptions{Gate: gate})
	if err != nil || !res.Merged || res.Attempts != 2 {
		t.Fatalf("MergeWith = %+v, %v", res, err)
	}
	if len(seen) != 2 || seen[1].try.BaseCommit != user || !strings.Contains(seen[1].files, "user.txt") || seen[1].head != res.Commit {
		t.Fatalf("the second gate run saw %+v; the user's commit is %s", seen, user)
	}
	if p := parents(t, dir, res.Commit); p[0] != user {
		t.Fatalf("the merge's first parent is %s, not the user's commit %s", p[0], user)
	}
	files := tgit(t, dir, "ls-tree", "--name-only", "main")
	if !strings.Contains(files, "user.txt") || !strings.Contains(files, "new.txt") {
		t.Fatalf("main has %q", files)
	}

	// A base that moves during every run gives up after Tries.
	wt2 := ensure(t, r, "bd-2", "main", "s2")
	commitIn(t, wt2.Path, "two.txt", "agent\n", "more work")
	n := 0
	busy := func(ctx context.Context, gdir string, try GateTry) (bool, error) {
		n++
		commitIn(t, dir, "user.txt", strings.Repeat("x", n)+"\n", "again")
		return true, nil
	}
	mainBefore := rev(t, dir, "main")
	res, err = r.MergeWith(bg, wt2, "Merge", MergeOptions{Gate: busy, Tries: 3})
	if err != nil || res.Merged || res.Moving == "" || n != 3 {
		t.Fatalf("MergeWith = %+v, %v after %d gate runs", res, err, n)
	}
	if got := tgit(t, dir, "log", "--format=%s", mainBefore+"..main"); strings.Contains(got, "Merge") {
		t.Fatalf("main got a merge: %q", got)
	}
}

// Two merges at once (two Repos, as two processes) form one queue: the
// second's gate starts after the first landed, and sees its work.
func TestGateQueue(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	a := ensure(t, open(t, dir), "bd-a", "main", "sa")
	b := ensure(t, open(t, dir), "bd-b", "main", "sb")
	commitIn(t, a.Path, "a-work.txt", "a\n", "a")
	commitIn(t, b.Path, "b-work.txt", "b\n", "b")

	firstIn := make(chan struct{})
	queued := make(chan struct{})
	var mu sync.Mutex
	var order []string
	var seen []gateSeen
	gate := func(name string) Gate {
		return func(ctx context.Context, gdir string, try GateTry) (bool, error) {
			mu.Lock()
			order = append(order, "start "+name)
			seen = append(seen, see(t, gdir, try))
			mu.Unlock()
			if name == "a" {
				close(firstIn)
				select {
				case <-queued: // b waits for the queue while a's gate runs
				case <-time.After(20 * time.Second):
					t.Error("b did not wait for the queue while a's gate ran")
				}
			}
			mu.Lock()
			order = append(order, "end "+name)
			mu.Unlock()
			return true, nil
		}
	}
	var wg sync.WaitGroup
	var resA, resB MergeResult
	var errA, errB error
	wg.Add(2)
	go func() {
		defer wg.Done()
		resA, errA = open(t, dir).MergeWith(bg, a, "Merge a", MergeOptions{Gate: gate("a")})
	}()
	go func() {
		defer wg.Done()
		<-firstIn
		resB, errB = open(t, dir).MergeWith(bg, b, "Merge b", MergeOptions{Gate: gate("b"), Queued: func() { close(queued) }})
	}()
	wg.Wait()
	if errA != nil || errB != nil || !resA.Merged || !resB.Merged {
		t.Fatalf("a: %+v, %v; b: %+v, %v", resA, errA, resB, errB)
	}
	if got := strings.Join(order, ", "); got != "start a, end a, start b, end b" {
		t.Fatalf("gate order: %s", got)
	}
	if !strings.Contains(seen[1].files, "a-work.txt") || seen[1].try.BaseCommit != resA.Commit {
		t.Fatalf("b's gate did not see a's landed work: %+v (a landed %s)", seen[1], resA.Commit)
	}
}

// A cancelled gate (Ctrl-C) merges nothing and leaves no worktree; a gate
// worktree a killed vibeteam left is removed by the next gated merge.
func TestGateCancelledAndStale(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "main", "s")
	commitIn(t, wt.Path, "new.txt", "agent\n", "agent work")
	mainBefore := rev(t, dir, "main")
	ctx, cancel := context.WithCancel(bg)
	var gdir string
	_, err := r.MergeWith(ctx, wt, "Merge", MergeOptions{Gate: func(ctx context.Context, d string, try GateTry) (bool, error) {
		gdir = d
		cancel()
		<-ctx.Done()
		return false, ctx.Err()
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if rev(t, dir, "main") != mainBefore {
		t.Fatal("main moved")
	}
	if _, err := os.Stat(gdir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the gate's worktree is still there: %v", err)
	}

	// Left by a kill: one registered, one not yet.
	stale, err := r.addGate(bg, mainBefore, false)
	if err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, WorktreesDir, gatePrefix+"half")
	write(t, filepath.Join(half, "x"), "x")
	res, err := r.MergeWith(bg, wt, "Merge", MergeOptions{Gate: func(ctx context.Context, d string, try GateTry) (bool, error) { return true, nil }})
	if err != nil || !res.Merged {
		t.Fatalf("MergeWith = %+v, %v", res, err)
	}
	for _, d := range []string{stale, half} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", d, err)
		}
	}
	if list := tgit(t, dir, "worktree", "list"); strings.Contains(list, gatePrefix) {
		t.Fatalf("git still lists a gate's worktree:\n%s", list)
	}
}
