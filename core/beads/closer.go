package beads

import (
	"context"
	"slices"
	"sync"
	"time"
)

// EpicCloseReason is the close reason of an epic a Closer closes after its
// last child.
const EpicCloseReason = "All children completed (closed by vibeteam after its last child)"

// Closer closes the beads of many runs in few bd calls: a bead whose run
// completed waits at most Delay, with the others that complete meanwhile,
// for one bd close of them all (each with its own reason). A flush also
// closes the epics those closes made eligible (every child closed), which
// bd never does by itself, so that what the epics held back becomes ready.
// Every goroutine it starts ends with Stop.
type Closer struct {
	client *Client
	delay  time.Duration
	// refused is told each bead (or epic) bd did not close, with why.
	refused func(id, why string)

	mu      sync.Mutex
	pending []Closing
	meta    map[string]Bead // what the pending beads' runs knew of them
	stale   bool            // a close since the last Stale may make a bead ready

	flushMu sync.Mutex
	kick    chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
}

// NewCloser starts a Closer on client's bd.
func NewCloser(client *Client, delay time.Duration, refused func(id, why string)) *Closer {
	c := &Closer{client: client, delay: delay, refused: refused, meta: map[string]Bead{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	c.wg.Add(1)
	go c.loop()
	return c
}

// Add queues bead b's close with reason (b: what its run knew of it, for
// its parent and dependents).
func (c *Closer) Add(b Bead, reason string) {
	c.mu.Lock()
	c.pending = append(c.pending, Closing{ID: b.ID(), Reason: reason})
	c.meta[b.ID()] = b
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Urgent reports whether a queued close may make another bead ready (its
// bead has dependents, or a parent that may become eligible): whoever is
// about to ask what is ready flushes first.
func (c *Closer) Urgent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pending {
		if b := c.meta[p.ID]; b.HasDependents() || b.Parent() != "" {
			return true
		}
	}
	return false
}

// Pending reports whether closes are queued.
func (c *Closer) Pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// Stale reports (and forgets) whether a close since the last call may have
// made a bead ready: a bead with dependents, or an epic.
func (c *Closer) Stale() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stale
	c.stale = false
	return s
}

func (c *Closer) loop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.kick:
		case <-c.done:
			return
		}
		t := time.NewTimer(c.delay)
		select {
		case <-t.C:
		case <-c.done:
			t.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c.Flush(ctx)
		cancel()
	}
}

// Stop ends the Closer's goroutine and closes what is still queued.
func (c *Closer) Stop(ctx context.Context) {
	close(c.done)
	c.wg.Wait()
	c.Flush(ctx)
}

// Flush closes the queued beads with one bd call, then the epics that
// made eligible.
func (c *Closer) Flush(ctx context.Context) {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	list, meta := c.pending, c.meta
	c.pending, c.meta = nil, map[string]Bead{}
	c.mu.Unlock()
	if len(list) == 0 {
		return
	}
	closed := c.closeAll(ctx, list)
	var parents []string
	for _, id := range closed {
		b := meta[id]
		if b.HasDependents() || b.Parent() != "" {
			c.markStale()
		}
		if p := b.Parent(); p != "" && !slices.Contains(parents, p) {
			parents = append(parents, p)
		}
	}
	c.closeEpics(ctx, parents)
}

func (c *Closer) markStale() {
	c.mu.Lock()
	c.stale = true
	c.mu.Unlock()
}

// closeAll closes list with one call: the ids closed.
func (c *Closer) closeAll(ctx context.Context, list []Closing) []string {
	refused, err := c.client.CloseAll(ctx, list)
	var closed []string
	for _, cl := range list {
		switch {
		case err != nil:
			c.refused(cl.ID, err.Error())
		case refused[cl.ID] != "":
			c.refused(cl.ID, refused[cl.ID])
		default:
			closed = append(closed, cl.ID)
		}
	}
	return closed
}

// closeEpics closes the epics among parents that bd finds eligible, and
// then, level by level, the epics those closes made eligible in turn.
func (c *Closer) closeEpics(ctx context.Context, parents []string) {
	if CloseEligibleEpics(ctx, c.client, parents, c.refused) > 0 {
		// An epic holds back its children and what it blocks.
		c.markStale()
	}
}

// CloseEligibleEpics closes the epics among parents (the parents of beads
// just closed) that bd finds eligible for closure, every child closed —
// which bd never does by itself —, then, level by level, the epics those
// closes made eligible in turn. refused is told each it could not close.
// It returns how many it closed.
func CloseEligibleEpics(ctx context.Context, client *Client, parents []string, refused func(id, why string)) int {
	n := 0
	var before []string // eligible already before the last closes
	for level := 0; len(parents) > 0 && level < 10; level++ {
		eligible, err := client.EligibleEpics(ctx)
		if err != nil {
			for _, p := range parents {
				refused(p, "its children are closed, but bd could not say whether it may close: "+err.Error())
			}
			return n
		}
		var list []Closing
		for _, id := range eligible {
			// This level: the parents of what was closed; above it, the
			// epics that became eligible with those closes.
			if level == 0 && slices.Contains(parents, id) || level > 0 && !slices.Contains(before, id) {
				list = append(list, Closing{ID: id, Reason: EpicCloseReason})
			}
		}
		before = eligible
		if len(list) == 0 {
			return n
		}
		no, err := client.CloseAll(ctx, list)
		parents = nil
		for _, cl := range list {
			switch {
			case err != nil:
				refused(cl.ID, err.Error())
			case no[cl.ID] != "":
				refused(cl.ID, no[cl.ID])
			default:
				parents = append(parents, cl.ID)
				n++
			}
		}
	}
	return n
}
