package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// queueAll asks b for the merges of wts, in order, each once the one
// before waits in the queue (so their order is known), then runs b until
// every answer is in.
func queueAll(t *testing.T, b *Batcher, items []MergeItem) ([]MergeResult, []error) {
	t.Helper()
	results, errs := make([]MergeResult, len(items)), make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.Merge(bg, it)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			b.mu.Lock()
			n := len(b.waiting)
			b.mu.Unlock()
			if n == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("merge %d never queued", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(bg)
	}()
	wg.Wait()
	b.Close()
	<-done
	return results, errs
}

// Eight merges in batches of four, the third red: the first batch is
// bisected, the red one found and left out, the others land oldest first,
// each with its own merge commit, in five gate runs.
func TestBatcherBisectsTheRedMerge(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	var mu sync.Mutex
	var runs []GateTry
	var news []BatchNews
	gate := func(ctx context.Context, gdir string, try GateTry) (bool, error) {
		mu.Lock()
		runs = append(runs, try)
		mu.Unlock()
		_, err := os.Stat(filepath.Join(gdir, "f3.txt"))
		return err != nil, nil
	}
	var items []MergeItem
	tips := map[string]string{}
	for i := 1; i <= 8; i++ {
		wt := ensure(t, r, fmt.Sprintf("bd-%d", i), "main", "s")
		tips[wt.Branch] = commitIn(t, wt.Path, fmt.Sprintf("f%d.txt", i), "x\n", "work")
		items = append(items, MergeItem{Worktree: wt, Message: fmt.Sprintf("Merge bd-%d", i), Gate: gate, GateKey: "g", Batched: func(n BatchNews) {
			mu.Lock()
			news = append(news, n)
			mu.Unlock()
		}})
	}
	results, errs := queueAll(t, r.NewBatcher(4), items)
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("merge %d: %v", i+1, errs[i])
		}
		if i == 2 {
			if !res.GateRed || res.Merged || len(res.Batch) != 4 {
				t.Errorf("the red merge: %+v", res)
			}
			continue
		}
		if !res.Merged || res.Commit == "" {
			t.Fatalf("merge %d: %+v", i+1, res)
		}
		if p := parents(t, dir, res.Commit); len(p) != 2 || p[1] != tips[items[i].Worktree.Branch] {
			t.Errorf("merge %d: its commit %s has parents %v, not the base and its branch", i+1, res.Commit, p)
		}
	}
	var order []string
	for _, l := range strings.Split(strings.TrimSpace(tgit(t, dir, "log", "--first-parent", "--reverse", "--merges", "--format=%s", "main")), "\n") {
		order = append(order, strings.TrimPrefix(l, "Merge "))
	}
	if want := []string{"bd-1", "bd-2", "bd-4", "bd-5", "bd-6", "bd-7", "bd-8"}; !slices.Equal(order, want) {
		t.Errorf("main's first-parent merges %v, want %v", order, want)
	}
	// 1-4 red, 1-2 green and landed, so 3-4 is red without a run of its
	// own; 3 red, 4 green, 5-8 green.
	if len(runs) != 5 {
		t.Errorf("%d gate runs, want 5: %+v", len(runs), runs)
	}
	if len(runs) > 0 && len(runs[0].Batch) != 4 {
		t.Errorf("the first gate run checked %v, not the batch of 4", runs[0].Batch)
	}
	bisected := 0
	for _, n := range news {
		if n.Phase == BatchBisected {
			bisected++
		}
	}
	if bisected < 2 {
		t.Errorf("news %+v: want the first batch and its second half bisected", news)
	}
}

// A merge red on its own is gated again up to its Retries: a flaky red
// does not stop it.
func TestBatcherRetriesARedMergeAlone(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	wt := ensure(t, r, "bd-1", "main", "s")
	commitIn(t, wt.Path, "a.txt", "x\n", "work")
	n := 0
	flaky := func(ctx context.Context, gdir string, try GateTry) (bool, error) {
		n++
		return n > 1, nil
	}
	results, errs := queueAll(t, r.NewBatcher(4), []MergeItem{{Worktree: wt, Message: "Merge", Gate: flaky, Retries: 1}})
	if errs[0] != nil || !results[0].Merged || n != 2 {
		t.Fatalf("%+v, %v after %d gate runs", results[0], errs[0], n)
	}
	// MergeWith retries the same way.
	wt2 := ensure(t, r, "bd-2", "main", "s")
	commitIn(t, wt2.Path, "b.txt", "x\n", "work")
	n = 0
	res, err := r.MergeWith(bg, wt2, "Merge 2", MergeOptions{Gate: flaky, Retries: 1})
	if err != nil || !res.Merged || n != 2 {
		t.Fatalf("MergeWith: %+v, %v after %d gate runs", res, err, n)
	}
}

// A Batcher's gates run in one worktree it keeps, each on exactly its
// candidate's tree whatever the gate before left there (a tracked file
// changed, untracked and ignored files); a sweep of stale gate worktrees
// (another process's, holding the queue) leaves it alone; it is gone when
// Run ends.
func TestBatcherKeepsOneCleanGateWorktree(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	var dirs []string
	var problems []string
	gate := func(ctx context.Context, gdir string, try GateTry) (bool, error) {
		dirs = append(dirs, gdir)
		if head := rev(t, gdir, "HEAD"); head != try.Commit {
			problems = append(problems, fmt.Sprintf("gate %d: HEAD %s, not the candidate %s", len(dirs), head, try.Commit))
		}
		if st := tgit(t, gdir, "status", "--porcelain", "--ignored", "--untracked-files=all"); st != "" {
			problems = append(problems, fmt.Sprintf("gate %d: the worktree is not the candidate's tree:\n%s", len(dirs), st))
		}
		write(t, filepath.Join(gdir, "a.txt"), "changed by the gate\n")
		write(t, filepath.Join(gdir, "out", "junk.txt"), "untracked\n")
		write(t, filepath.Join(gdir, "build.log"), "ignored\n")
		r.removeStaleGates(ctx) // as another process would, holding the queue
		if _, err := os.Stat(gdir); err != nil {
			problems = append(problems, fmt.Sprintf("gate %d: the sweep removed the gate's worktree: %v", len(dirs), err))
		}
		return true, nil
	}
	var items []MergeItem
	for i := 1; i <= 3; i++ {
		wt := ensure(t, r, fmt.Sprintf("bd-%d", i), "main", "s")
		commitIn(t, wt.Path, fmt.Sprintf("f%d.txt", i), "x\n", "work")
		items = append(items, MergeItem{Worktree: wt, Message: fmt.Sprintf("Merge bd-%d", i), Gate: gate, GateKey: fmt.Sprintf("g%d", i)})
	}
	// Three gate keys: three batches, three gates.
	results, errs := queueAll(t, r.NewBatcher(4), items)
	for i := range results {
		if errs[i] != nil || !results[i].Merged {
			t.Fatalf("merge %d: %+v, %v", i+1, results[i], errs[i])
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(dirs) != 3 || dirs[1] != dirs[0] || dirs[2] != dirs[0] {
		t.Errorf("the gates ran in %v, not in one worktree kept for them", dirs)
	}
	if len(dirs) > 0 {
		if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
			t.Errorf("the kept gate worktree %s is still there after Run: %v", dirs[0], err)
		}
	}
	if list := tgit(t, dir, "worktree", "list", "--porcelain"); strings.Contains(list, gatePrefix) {
		t.Errorf("git still lists a gate worktree:\n%s", list)
	}
}

// A gate worktree kept by a Batcher that was killed (its lock let go by
// the kernel) is stale: the next run's queue removes it as it starts,
// though it has no merge to make.
func TestKeptGateOfAKilledRunIsSwept(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	r := open(t, dir)
	k, err := r.keepGate(bg)
	if err != nil {
		t.Fatal(err)
	}
	r.removeStaleGates(bg)
	if _, err := os.Stat(k.dir); err != nil {
		t.Fatalf("a kept gate worktree was swept while kept: %v", err)
	}
	k.unlock() // as the kernel does when its process dies
	// The next run's queue sweeps it as it starts, merges or not.
	q := r.NewBatcher(4)
	q.Close()
	q.Run(bg)
	if _, err := os.Stat(k.dir); !os.IsNotExist(err) {
		t.Errorf("the stale kept gate worktree %s is still there: %v", k.dir, err)
	}
	if list := tgit(t, dir, "worktree", "list", "--porcelain"); strings.Contains(list, gatePrefix) {
		t.Errorf("git still lists a gate worktree:\n%s", list)
	}
}
