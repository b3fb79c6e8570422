package worktree

import (
	"context"
	"strings"
	"sync"
)

// While a candidate's gate runs, the queue computes the merges of the
// next batch ahead, on the candidate's tip (the base's next commit if the
// gate is green): the merge-tree and commit-tree of each merge that waits,
// each on the one before. A merge is a pure function of its parents and
// message, so these are remembered by their inputs; the next candidate
// finds them computed when the base is where they assumed, and computes
// them as before when it is not. Nothing is decided ahead: the candidate
// still reads the base, and its own gate still checks its tip before it
// lands. The gate of a batch of merges takes seconds, its candidate a
// tenth of a second a git command on a loaded machine: ahead, the queue
// does not wait for the latter.

// mergeKey is what a merge commit is computed from.
type mergeKey struct{ prev, tip, message string }

// mergeMemo is a clean merge computed: its tree and merge commit.
type mergeMemo struct{ tree, commit string }

// maxMemos bounds the merges remembered (a batch's worth, several times).
const maxMemos = 256

// memos remembers merges for a Batcher's run.
type memos struct {
	mu sync.Mutex
	m  map[mergeKey]mergeMemo
}

func (ms *memos) get(k mergeKey) (mergeMemo, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.m[k]
	return m, ok
}

func (ms *memos) put(k mergeKey, m mergeMemo) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.m == nil || len(ms.m) >= maxMemos {
		ms.m = map[mergeKey]mergeMemo{}
	}
	ms.m[k] = m
}

// cleanMerge is the merge commit of tip on prev with message, computed
// or remembered; conflicts (nothing remembered) when it does not merge
// cleanly.
func (r *Repo) cleanMerge(ctx context.Context, ms *memos, id []string, prev, tip, message, baseName, branchName string) (mergeMemo, []Conflict, error) {
	k := mergeKey{prev, tip, message}
	if m, ok := ms.get(k); ok {
		return m, nil, nil
	}
	tree, conflicts, err := r.mergeTree(ctx, prev, tip, baseName, branchName)
	if err != nil || len(conflicts) > 0 {
		return mergeMemo{}, conflicts, err
	}
	out, err := run(ctx, cmd{dir: r.Top, args: append(append([]string(nil), id...), "commit-tree", tree, "-p", prev, "-p", tip, "-F", "-"), stdin: message})
	if err != nil {
		return mergeMemo{}, nil, err
	}
	m := mergeMemo{tree: tree, commit: strings.TrimSpace(out)}
	ms.put(k, m)
	return m, nil, nil
}

// ahead computes, in the background, the merges of the first merges that
// wait for base, on tip; the function it returns stops it and waits for
// its end.
func (b *Batcher) ahead(ctx context.Context, base, tip string) func() {
	b.mu.Lock()
	var items []MergeItem
	for _, q := range b.waiting {
		if len(items) == b.size {
			break
		}
		if q.item.Worktree.Base == base && q.ctx.Err() == nil {
			items = append(items, q.item)
		}
	}
	b.mu.Unlock()
	if len(items) == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		revs := make([]string, len(items))
		for i, it := range items {
			revs[i] = branchRef(it.Worktree.Branch) + "^{commit}"
		}
		tips, ok := revParseAll(ctx, b.repo.Top, revs...)
		if !ok {
			return
		}
		prev := tip
		for i, it := range items {
			m, conflicts, err := b.repo.cleanMerge(ctx, &b.memos, b.id, prev, tips[i], it.Message, base, it.Worktree.Branch)
			if err != nil {
				return
			}
			if len(conflicts) == 0 {
				prev = m.commit
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
