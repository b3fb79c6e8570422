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
// finds them computed (or waits for the one under way) when the base is
// where they assumed, and computes them as before when it is not. Nothing
// is decided ahead: the candidate still reads the base, and its own gate
// still checks its tip before it lands. A candidate is two gits a merge,
// a tenth of a second or more each on a loaded machine: ahead, the queue
// does not wait for them between two gates.

// mergeKey is what a merge is computed from (the names label a
// conflict's hunks).
type mergeKey struct{ prev, tip, message, baseName, branchName string }

// mergeMemo is a clean merge computed: its tree and merge commit.
type mergeMemo struct{ tree, commit string }

// memoEntry is a merge computed, or being computed (done is closed when
// it is); one that failed (its computation was stopped) is forgotten, and
// whoever waited for it computes it.
type memoEntry struct {
	done      chan struct{}
	m         mergeMemo
	conflicts []Conflict
	err       error
}

// maxMemos bounds the merges remembered (a batch's worth, several times).
const maxMemos = 256

// memos remembers merges for a Batcher's run.
type memos struct {
	mu sync.Mutex
	m  map[mergeKey]*memoEntry
}

// claim is k's entry, and whether the caller is to compute it (a new one).
func (ms *memos) claim(k mergeKey) (*memoEntry, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if e, ok := ms.m[k]; ok {
		return e, false
	}
	if ms.m == nil || len(ms.m) >= maxMemos {
		ms.m = map[mergeKey]*memoEntry{}
	}
	e := &memoEntry{done: make(chan struct{})}
	ms.m[k] = e
	return e, true
}

// forget drops k's entry e (a failed computation).
func (ms *memos) forget(k mergeKey, e *memoEntry) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.m[k] == e {
		delete(ms.m, k)
	}
}

// cleanMerge is the merge commit of tip on prev with message, computed,
// remembered, or waited for while the queue computes it ahead; conflicts
// (and no commit) when it does not merge cleanly.
func (r *Repo) cleanMerge(ctx context.Context, ms *memos, id []string, prev, tip, message, baseName, branchName string) (mergeMemo, []Conflict, error) {
	k := mergeKey{prev, tip, message, baseName, branchName}
	for {
		e, mine := ms.claim(k)
		if !mine {
			select {
			case <-e.done:
			case <-ctx.Done():
				return mergeMemo{}, nil, ctx.Err()
			}
			if e.err == nil {
				return e.m, e.conflicts, nil
			}
			ms.forget(k, e)
			continue
		}
		e.m, e.conflicts, e.err = r.computeMerge(ctx, id, k)
		if e.err != nil {
			ms.forget(k, e)
		}
		close(e.done)
		return e.m, e.conflicts, e.err
	}
}

// computeMerge computes k's merge: merge-tree, then commit-tree when it
// is clean.
func (r *Repo) computeMerge(ctx context.Context, id []string, k mergeKey) (mergeMemo, []Conflict, error) {
	tree, conflicts, err := r.mergeTree(ctx, k.prev, k.tip, k.baseName, k.branchName)
	if err != nil || len(conflicts) > 0 {
		return mergeMemo{}, conflicts, err
	}
	out, err := run(ctx, cmd{dir: r.Top, args: append(append([]string(nil), id...), "commit-tree", tree, "-p", k.prev, "-p", k.tip, "-F", "-"), stdin: k.message})
	if err != nil {
		return mergeMemo{}, nil, err
	}
	return mergeMemo{tree: tree, commit: strings.TrimSpace(out)}, nil, nil
}

// startAhead computes, in the background, the merges of the merges that
// wait for base and would form the next batch, each on the one before,
// from tip; a merge asked while it runs is computed too, on the last. The
// computation started before is stopped first (its candidate was formed);
// Run stops the last one at its end.
func (b *Batcher) startAhead(ctx context.Context, base, tip string) {
	b.stopAhead()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		computed := map[*batchReq]bool{}
		prev := tip
		for {
			for _, q := range b.nextBatchOf(base) {
				if computed[q] {
					continue
				}
				computed[q] = true
				it := q.item
				tipNow, ok, err := revParse(ctx, b.repo.Top, branchRef(it.Worktree.Branch)+"^{commit}")
				if err != nil || !ok {
					return
				}
				m, conflicts, err := b.repo.cleanMerge(ctx, &b.memos, b.id, prev, tipNow, it.Message, base, it.Worktree.Branch)
				if err != nil {
					return
				}
				if len(conflicts) == 0 {
					prev = m.commit
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-b.arrived:
			}
		}
	}()
	b.aheadStop = func() {
		cancel()
		<-done
	}
}

// nextBatchOf is the merges that wait and would form the next batch, as
// next takes them, when they are for base.
func (b *Batcher) nextBatchOf(base string) []*batchReq {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch []*batchReq
	for _, q := range b.waiting {
		if q.ctx.Err() != nil {
			continue
		}
		if len(batch) == b.size || q.item.Worktree.Base != base || len(batch) > 0 && q.item.GateKey != batch[0].item.GateKey {
			break
		}
		batch = append(batch, q)
	}
	return batch
}

// stopAhead stops the computation ahead, if one runs, and waits for it.
func (b *Batcher) stopAhead() {
	if b.aheadStop != nil {
		b.aheadStop()
		b.aheadStop = nil
	}
}
