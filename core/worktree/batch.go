package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// MergeItem is one merge a Batcher is asked for: the worktree's branch
// into its base, as MergeWith merges it.
type MergeItem struct {
	Worktree *Worktree
	Message  string
	// Gate checks the candidates this merge is the oldest of, and the
	// merge alone when a candidate is bisected down to it.
	Gate Gate
	// GateKey: merges batch together only with the same key (the same
	// gate command, timeout, sandbox).
	GateKey string
	// Retries is how many more times a red gate of this merge alone runs
	// before it is called red (flaky tests).
	Retries int
	// Queued, when set, is called when the merge waits for others.
	Queued func()
	// Batched, when set, is told of each batch the merge is part of.
	Batched func(BatchNews)
}

// Batch phases (BatchNews.Phase).
const (
	BatchFormed   = "formed"   // the candidate was computed: the base plus the batch's merges in order
	BatchGated    = "gated"    // its gate ended (Green)
	BatchBisected = "bisected" // it was red: its halves are gated in order
)

// BatchNews is what happens to a batch of several merges.
type BatchNews struct {
	Phase    string
	Branches []string // the batch's merges, oldest first
	Base     string
	Commit   string // the candidate's tip
	Green    bool
}

// Batcher is a repository's merge queue within one process: the merges
// asked of it are landed oldest first, several at once when they wait
// together (up to its size), each candidate gated once and bisected when
// red (see Run). Across processes merges still take turns on the
// repository's queue lock; a batch holds it from its candidate's
// computation to its landing.
type Batcher struct {
	repo *Repo
	size int
	// remote, when set, is the remote whose base the merges land on
	// (see Remote).
	remote string

	mu      sync.Mutex
	waiting []*batchReq
	busy    bool
	closed  bool
	wake    chan struct{}

	// Run's own, between batches: the gate worktree it keeps (nil: each
	// gate makes its own) and the committer identity.
	kept  *keptGate
	id    []string
	hasID bool
	memos memos // the merges computed, some ahead (see startAhead)
	// aheadStop stops the computation ahead under way (nil: none);
	// arrived tells it a merge was asked.
	aheadStop func()
	arrived   chan struct{}
	seen      map[string][]gitWorktree
}

type batchReq struct {
	ctx    context.Context
	item   MergeItem
	answer chan batchAnswer
}

type batchAnswer struct {
	res MergeResult
	err error
}

// NewBatcher makes the repository's in-process merge queue; size bounds a
// batch (1: one merge at a time). Its owner runs Run and waits for it.
func (r *Repo) NewBatcher(size int) *Batcher {
	return &Batcher{repo: r, size: max(size, 1), wake: make(chan struct{}, 1), arrived: make(chan struct{}, 1), seen: map[string][]gitWorktree{}}
}

// Remote makes the batcher land on the remote's copy of each base rather
// than the local branch: every candidate is computed on the base as just
// fetched from remote, gated, and pushed as a fast-forward of the commit
// the gate saw (never forced), the beads' branches with it. A push the
// remote rejects (another machine landed first) fetches, merges and gates
// again, up to RemoteTries times. The local base follows the remote's
// when it is behind. Call it before Run.
func (b *Batcher) Remote(name string) *Batcher {
	b.remote = name
	return b
}

// Merge asks for a merge and waits for its answer. It returns only once
// the merge landed or never will: a merge taken into a batch is answered
// when the batch is settled, whatever ctx does meanwhile, so the caller's
// journal never says "not merged" of a merge that lands.
func (b *Batcher) Merge(ctx context.Context, item MergeItem) (MergeResult, error) {
	if item.Worktree == nil || item.Worktree.Branch == "" || item.Worktree.Base == "" {
		return MergeResult{}, errors.New("no worktree")
	}
	if strings.TrimSpace(item.Message) == "" {
		return MergeResult{}, errors.New("a merge needs a message")
	}
	q := &batchReq{ctx: ctx, item: item, answer: make(chan batchAnswer, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return MergeResult{}, errors.New("the merge queue is closed")
	}
	b.waiting = append(b.waiting, q)
	busy := b.busy
	b.mu.Unlock()
	if busy && item.Queued != nil {
		item.Queued()
	}
	b.poke()
	a := <-q.answer
	return a.res, a.err
}

// MergeAll asks for the merges of items together, in their order (the
// oldest first), and waits for every answer.
func (b *Batcher) MergeAll(ctx context.Context, items []MergeItem) ([]MergeResult, []error) {
	results, errs := make([]MergeResult, len(items)), make([]error, len(items))
	qs := make([]*batchReq, len(items))
	b.mu.Lock()
	for i, it := range items {
		if it.Worktree == nil || it.Worktree.Branch == "" || it.Worktree.Base == "" || strings.TrimSpace(it.Message) == "" || b.closed {
			errs[i] = errors.New("no merge to make: a worktree, a message and an open queue are needed")
			continue
		}
		qs[i] = &batchReq{ctx: ctx, item: it, answer: make(chan batchAnswer, 1)}
		b.waiting = append(b.waiting, qs[i])
	}
	b.mu.Unlock()
	b.poke()
	for i, q := range qs {
		if q != nil {
			a := <-q.answer
			results[i], errs[i] = a.res, a.err
		}
	}
	return results, errs
}

// poke tells Run, and the computation ahead, that a merge was asked.
func (b *Batcher) poke() {
	for _, c := range []chan struct{}{b.wake, b.arrived} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Close ends Run once the merges asked are answered; no merge may be
// asked after it.
func (b *Batcher) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Run lands the merges asked, batch after batch, until Close. A merge
// whose ctx ended before its batch formed is answered with ctx's error,
// untouched; when ctx ends, every batch is answered with its error.
//
// Run keeps one gate worktree from its start to its end (made before the
// beads' own worktrees are asked for, so the first gate does not wait for
// them), and each gate has its candidate checked out in it afresh.
func (b *Batcher) Run(ctx context.Context) {
	defer b.stopAhead()
	// A killed run's kept gate worktree goes first, even if no merge
	// comes to sweep it.
	b.repo.sweepGatesIfIdle(ctx)
	if kept, err := b.repo.keepGate(ctx); err == nil {
		b.kept = kept
		defer func() {
			b.kept = nil
			kept.release(ctx)
		}()
	}
	for {
		batch, done := b.next()
		if done {
			return
		}
		if batch == nil {
			<-b.wake
			continue
		}
		results, err := b.mergeBatch(ctx, batch)
		for i, q := range batch {
			a := batchAnswer{res: results[i]}
			if !results[i].settled() {
				// Only what had not landed (nor was answered) when the
				// batch stopped gets the error: what landed says so.
				a.err = err
				if err == nil {
					a.err = errors.New("the merge queue gave this merge no answer")
				}
			}
			q.answer <- a
		}
		b.mu.Lock()
		b.busy = false
		b.mu.Unlock()
	}
}

// next takes the oldest waiting merges that batch together, up to the
// size; done when closed and nothing waits.
func (b *Batcher) next() ([]*batchReq, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Merges whose caller stopped before their turn are not touched.
	kept := b.waiting[:0]
	for _, q := range b.waiting {
		if err := q.ctx.Err(); err != nil {
			q.answer <- batchAnswer{err: err}
			continue
		}
		kept = append(kept, q)
	}
	b.waiting = kept
	if len(b.waiting) == 0 {
		return nil, b.closed
	}
	first := b.waiting[0].item
	n := 1
	for n < len(b.waiting) && n < b.size {
		it := b.waiting[n].item
		if it.GateKey != first.GateKey || it.Worktree.Base != first.Worktree.Base {
			break // oldest first: no later merge jumps ahead of this one
		}
		n++
	}
	batch := append([]*batchReq(nil), b.waiting[:n]...)
	b.waiting = append(b.waiting[:0], b.waiting[n:]...)
	b.busy = true
	return batch, false
}

// batchRun is one batch being settled, holding the merge queue.
type batchRun struct {
	r       *Repo
	q       *Batcher
	lock    *os.File
	id      []string
	seen    []gitWorktree
	base    string
	items   []MergeItem
	results []MergeResult
	formed  []string // the batch's branches
	moves   int      // candidates computed again because the base moved
	remote  string   // the remote whose base it lands on; "": the local one
	// fetched is the remote's base as a rejected push just fetched it:
	// the next candidate starts from it without fetching again (the
	// sooner it is gated and pushed, the likelier it lands).
	fetched string
}

// mergeBatch lands a batch of merges into one base, oldest first: the
// candidate (the base, then each merge's commit on the one before) is
// gated once; green, the base moves to its tip, each merge keeping its
// own merge commit; red, its halves are settled in order, down to the
// merges that are red on their own. The base moves only to a candidate
// whose gate was green.
func (b *Batcher) mergeBatch(ctx context.Context, batch []*batchReq) ([]MergeResult, error) {
	r := b.repo
	results := make([]MergeResult, len(batch))
	if err := r.checkMergeTree(ctx); err != nil {
		return results, err
	}
	if !b.hasID {
		id, err := identity(ctx, r.Top)
		if err != nil {
			return results, err
		}
		b.id, b.hasID = id, true
	}
	base := batch[0].item.Worktree.Base
	run := &batchRun{r: r, q: b, id: b.id, base: base, results: results, remote: b.remote}
	for _, q := range batch {
		run.items = append(run.items, q.item)
		run.formed = append(run.formed, q.item.Worktree.Branch)
	}
	// Where the base is checked out, as the last batch found it (land
	// checks that it still is, and asks git again when it is not).
	if seen, ok := b.seen[base]; ok {
		run.seen = seen
	} else if list, err := r.worktreesNow(ctx); err == nil {
		run.seen = findBranch(list, "refs/heads/"+base)
		b.seen[base] = run.seen
	}
	unlock, lock, err := r.queue(ctx, func() {
		for _, it := range run.items {
			if it.Queued != nil {
				it.Queued()
			}
		}
	})
	if err != nil {
		return results, err
	}
	defer unlock()
	run.lock = lock
	r.removeStaleGates(ctx)
	all := make([]int, len(batch))
	for i := range all {
		all[i] = i
	}
	return results, run.settle(ctx, all, false)
}

// candidate is a batch's merges computed on the base: chain are the
// merges in it (indexes into items), commits their merge commits.
type candidate struct {
	old     string
	chain   []int
	commits []string
	tips    []string
}

// settle lands what it can of the merges group (indexes, oldest first)
// on the base as it is now. red says the group's candidate is known to be
// red: it is the second half of a red candidate whose first half landed
// whole, so the base is now where that candidate's tip was less the
// group's merges, and its tip would be the red tip again. Such a group of
// several is bisected without a gate run; a merge alone is always gated
// (a flaky red is found out there).
func (b *batchRun) settle(ctx context.Context, group []int, red bool) error {
	c, err := b.candidate(ctx, group)
	if err != nil || len(c.chain) == 0 {
		return err
	}
	several := len(c.chain) > 1
	if several {
		b.tell(c.chain, BatchNews{Phase: BatchFormed, Commit: c.tip()})
	}
	green := false
	if known := several && red && len(c.chain) == len(group); !known {
		if green, err = b.gate(ctx, c); err != nil {
			return err
		}
		if several {
			b.tell(c.chain, BatchNews{Phase: BatchGated, Commit: c.tip(), Green: green})
		}
	}
	if green {
		return b.land(ctx, c, group)
	}
	if !several {
		i := c.chain[0]
		b.results[i] = MergeResult{GateRed: true, Commit: c.commits[0], Attempts: b.moves + 1, Batch: b.several()}
		return nil
	}
	b.tell(c.chain, BatchNews{Phase: BatchBisected, Commit: c.tip()})
	half := len(c.chain) / 2
	if err := b.settle(ctx, c.chain[:half], false); err != nil {
		return err
	}
	landed := true
	for _, i := range c.chain[:half] {
		landed = landed && b.results[i].Merged && !b.results[i].UpToDate
	}
	return b.settle(ctx, c.chain[half:], landed)
}

func (c *candidate) tip() string { return c.commits[len(c.commits)-1] }

// candidate computes the group's merges on the base, each on the one
// before; a merge the base has already, that conflicts, or that git
// refuses is answered here and left out. Two gits a merge (merge-tree,
// commit-tree), the refs read in one: the queue waits for each of them.
func (b *batchRun) candidate(ctx context.Context, group []int) (*candidate, error) {
	baseRef := "refs/heads/" + b.base
	old, oldTree, tips, err := b.refs(ctx, group)
	if err != nil {
		return nil, err
	}
	if why := b.r.busy(baseRef); why != "" && b.remote == "" {
		for _, i := range group {
			b.results[i] = MergeResult{Refused: why}
		}
		return &candidate{}, nil
	}
	c := &candidate{old: old}
	prev, prevTree := old, oldTree
	for k, i := range group {
		wt, tip := b.items[i].Worktree, tips[k]
		m, conflicts, err := b.r.cleanMerge(ctx, &b.q.memos, b.id, prev, tip, b.items[i].Message, wt.Base, wt.Branch)
		if err != nil {
			return nil, err
		}
		// A branch the base has already merges into the tree before it
		// without conflict: only then is it worth asking git whether it is
		// so.
		if len(conflicts) == 0 && (prevTree == "" || m.tree == prevTree) {
			if done, err := isAncestor(ctx, b.r.Top, tip, old); err != nil {
				return nil, err
			} else if done {
				by, err := broughtIn(ctx, b.r.Top, tip, old)
				if err != nil {
					return nil, err
				}
				b.results[i] = MergeResult{Merged: true, UpToDate: true, Commit: by}
				continue
			}
		}
		if len(conflicts) > 0 {
			b.results[i] = MergeResult{Conflicts: conflicts, Batch: b.several()}
			continue
		}
		prev, prevTree = m.commit, m.tree
		c.chain, c.commits, c.tips = append(c.chain, i), append(c.commits, prev), append(c.tips, tip)
	}
	return c, nil
}

// refs reads the base's commit and tree and the group's branches' tips,
// in one git when they all resolve; else each alone, to say which does
// not. oldTree is "" when it was not read. Landing on a remote, the base
// is the remote's as just fetched.
func (b *batchRun) refs(ctx context.Context, group []int) (old, oldTree string, tips []string, err error) {
	baseRef := "refs/heads/" + b.base
	var revs []string
	if b.remote != "" {
		// The remote's base as it is now: the gate sees what the push
		// will fast-forward.
		old, b.fetched = b.fetched, ""
		if old == "" {
			if old, err = b.r.Fetch(ctx, b.remote, b.base); err != nil {
				return "", "", nil, err
			}
		}
		b.r.followRemote(withLock(ctx, b.lock), b.base, old, b.seen)
	} else {
		revs = []string{baseRef + "^{commit}", baseRef + "^{tree}"}
	}
	own := len(revs)
	for _, i := range group {
		revs = append(revs, branchRef(b.items[i].Worktree.Branch)+"^{commit}")
	}
	if ids, ok := revParseAll(ctx, b.r.Top, revs...); ok {
		if b.remote != "" {
			return old, "", ids, nil
		}
		return ids[0], ids[1], ids[2:], nil
	}
	if b.remote == "" {
		id, ok, err := revParse(ctx, b.r.Top, revs[0])
		if err != nil {
			return "", "", nil, err
		} else if !ok {
			return "", "", nil, fmt.Errorf("base branch %s does not exist", b.base)
		}
		old = id
	}
	for k, i := range group {
		tip, ok, err := revParse(ctx, b.r.Top, revs[own+k])
		if err != nil {
			return "", "", nil, err
		} else if !ok {
			return "", "", nil, fmt.Errorf("branch %s does not exist", b.items[i].Worktree.Branch)
		}
		tips = append(tips, tip)
	}
	return old, "", tips, nil
}

// branchRef is a branch's full ref name (a Worktree's Branch may be one
// already: a remote-tracking branch vibeteam land merges).
func branchRef(branch string) string {
	if strings.HasPrefix(branch, "refs/") {
		return branch
	}
	return "refs/heads/" + branch
}

// gate runs the gate of the candidate's oldest merge on its tip; a merge
// gated alone is run again, up to its Retries, while red.
func (b *batchRun) gate(ctx context.Context, c *candidate) (bool, error) {
	first := b.items[c.chain[0]]
	if first.Gate == nil {
		return true, nil
	}
	try := GateTry{Attempt: b.moves + 1, Base: b.base, Branch: first.Worktree.Branch, BaseCommit: c.old, Tip: c.tips[len(c.tips)-1], Commit: c.tip()}
	if len(c.chain) > 1 {
		for _, i := range c.chain {
			try.Batch = append(try.Batch, b.items[i].Worktree.Branch)
		}
	}
	retries := 0
	if len(c.chain) == 1 {
		retries = first.Retries
	}
	b.q.startAhead(ctx, b.base, c.tip())
	return b.r.gateRetrying(ctx, b.q.kept, first.Gate, retries, try)
}

// land moves the base to the green candidate's tip: every merge of it
// lands, each with its own merge commit. When the base moved meanwhile
// (a commit by someone who does not queue), the group is settled again
// on it, up to DefaultGateTries times.
func (b *batchRun) land(ctx context.Context, c *candidate, group []int) error {
	names := make([]string, len(c.chain))
	for k, i := range c.chain {
		names[k] = b.items[i].Worktree.Branch
	}
	wt := &Worktree{Base: b.base, Branch: strings.Join(names, ", ")}
	var res MergeResult
	var moved bool
	var err error
	tries := DefaultGateTries
	if b.remote != "" {
		res, moved, err = b.landRemote(ctx, c, names)
		tries = RemoteTries
	} else {
		res, moved, err = b.r.land(withLock(ctx, b.lock), wt, &pending{old: c.old, tip: c.tips[len(c.tips)-1], commit: c.tip()}, b.seen)
	}
	if err != nil {
		return err
	}
	if moved {
		b.moves++
		if b.moves < tries {
			return b.settle(ctx, group, false)
		}
		for _, i := range c.chain {
			b.results[i] = MergeResult{Moving: fmt.Sprintf("branch %s moved while each of %d merges of %s was being checked; nothing was merged: run it again when %s is quieter", b.base, b.moves, b.items[i].Worktree.Branch, b.base), Attempts: b.moves}
		}
		return nil
	}
	for k, i := range c.chain {
		r := res
		if res.Merged {
			r.Commit = c.commits[k]
		}
		r.Attempts, r.Batch = b.moves+1, b.several()
		b.results[i] = r
	}
	return nil
}

// landRemote pushes the green candidate to the remote's base: moved when
// the remote rejected it (its base is no longer the one the gate saw).
// Landed, the local base follows.
func (b *batchRun) landRemote(ctx context.Context, c *candidate, branches []string) (MergeResult, bool, error) {
	err := b.r.push(ctx, b.remote, b.base, c.tip(), branches)
	var rejected *rejectedError
	if errors.As(err, &rejected) {
		// Moved (another machine landed first): merged and gated again.
		// Still where the gate saw it: the remote refuses for a reason
		// of its own (a hook, a protected branch), which another try
		// would meet again.
		now, ferr := b.r.Fetch(ctx, b.remote, b.base)
		if ferr != nil {
			return MergeResult{}, false, ferr
		}
		if now != c.old {
			b.fetched = now
			return MergeResult{}, true, nil
		}
		return MergeResult{}, false, fmt.Errorf("%s refused the push of %s: %s", b.remote, b.base, rejected.summary)
	}
	if err != nil {
		return MergeResult{}, false, err
	}
	b.r.followRemote(withLock(ctx, b.lock), b.base, c.tip(), b.seen)
	return MergeResult{Merged: true, Commit: c.tip()}, false, nil
}

// settled reports whether the result says how the merge went.
func (m MergeResult) settled() bool {
	return m.Merged || m.GateRed || m.Refused != "" || m.Moving != "" || len(m.Conflicts) > 0
}

// several is the batch's branches when it had more than one merge.
func (b *batchRun) several() []string {
	if len(b.formed) > 1 {
		return b.formed
	}
	return nil
}

// tell gives news of a batch to each of its merges.
func (b *batchRun) tell(chain []int, news BatchNews) {
	news.Base = b.base
	for _, i := range chain {
		news.Branches = append(news.Branches, b.items[i].Worktree.Branch)
	}
	for _, i := range chain {
		if f := b.items[i].Batched; f != nil {
			f(news)
		}
	}
}
