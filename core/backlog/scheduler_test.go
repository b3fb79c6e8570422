package backlog

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// fakeBacklog is a bead tracker in memory: a bead is ready when it is
// open and its blockers are closed; a run takes its time and closes it.
type fakeBacklog struct {
	mu        sync.Mutex
	open      []string
	blockers  map[string][]string
	closed    map[string]bool
	adapters  map[string][]string
	limitOnce map[string]time.Duration // bead → its first run hits a limit that resets after this
	took      time.Duration
	running   int
	most      int
	order     []string // the beads' ends, in order
	runs      map[string]int
}

func newFake(ids ...string) *fakeBacklog {
	return &fakeBacklog{open: ids, blockers: map[string][]string{}, closed: map[string]bool{}, adapters: map[string][]string{},
		limitOnce: map[string]time.Duration{}, took: time.Second, runs: map[string]int{}}
}

func (f *fakeBacklog) config(bl *state.Backlog, jobs, limit int, wait time.Duration) Config {
	var mu sync.Mutex
	return Config{
		Jobs: jobs, Limit: limit, WaitLimits: wait,
		Ready: func(context.Context) ([]string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			var ids []string
		next:
			for _, id := range f.open {
				if f.closed[id] || f.runs[id] > 0 {
					continue
				}
				for _, b := range f.blockers[id] {
					if !f.closed[b] {
						continue next
					}
				}
				ids = append(ids, id)
			}
			return ids, nil
		},
		Prepare: func(_ context.Context, id string) (*state.BacklogBead, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return &state.BacklogBead{ID: id, Session: "s-" + id, Adapters: f.adapters[id]}, nil
		},
		Run: func(ctx context.Context, b *state.BacklogBead, resume bool) {
			f.mu.Lock()
			f.runs[b.ID]++
			f.running++
			f.most = max(f.most, f.running)
			limit, limited := f.limitOnce[b.ID]
			delete(f.limitOnce, b.ID)
			f.mu.Unlock()
			select {
			case <-time.After(f.took):
			case <-ctx.Done():
			}
			f.mu.Lock()
			f.running--
			f.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ctx.Err() != nil:
				b.Status = string(state.StatusCancelled)
			case limited:
				reset := time.Now().Add(limit)
				b.Status, b.LimitedUntil = statusLimited, &reset
			default:
				b.Status = string(state.StatusCompleted)
				f.mu.Lock()
				f.closed[b.ID] = true
				f.order = append(f.order, b.ID)
				f.mu.Unlock()
			}
		},
		Changed: func() {},
		Lock:    &mu,
	}
}

func TestJobsBoundAndUnblockedBeadsArePickedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("a", "b", "c", "d", "e", "f")
		f.blockers["f"] = []string{"a"}
		f.blockers["e"] = []string{"f"}
		bl := &state.Backlog{}
		start := time.Now()
		if err := New(bl, f.config(bl, 3, 0, 0)).Run(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if f.most != 3 {
			t.Errorf("%d at once, want 3", f.most)
		}
		if len(f.order) != 6 {
			t.Fatalf("ended: %v", f.order)
		}
		if slices.Index(f.order, "f") < slices.Index(f.order, "a") || slices.Index(f.order, "e") < slices.Index(f.order, "f") {
			t.Errorf("order %v: a dependant ran before its blocker", f.order)
		}
		for id, n := range f.runs {
			if n != 1 {
				t.Errorf("%s ran %d times", id, n)
			}
		}
		// a, b, c; then d and f as a ends; then e: three rounds.
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("took %s, want 3s", took)
		}
	})
}

func TestLimitTakesAtMostK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("a", "b", "c", "d")
		bl := &state.Backlog{}
		if err := New(bl, f.config(bl, 2, 3, 0)).Run(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if len(bl.Beads) != 3 || len(f.order) != 3 {
			t.Errorf("took %d beads: %v", len(bl.Beads), f.order)
		}
	})
}

func TestUsageLimitHoldsThatCLIsBeadsAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("a", "b", "c")
		f.adapters["a"] = []string{"claude"}
		f.adapters["b"] = []string{"claude"}
		f.adapters["c"] = []string{"codex"}
		f.limitOnce["a"] = time.Hour
		f.took = time.Minute
		bl := &state.Backlog{}
		start := time.Now()
		// One at a time: a is limited after a minute; b (claude) waits
		// for the reset while c (codex) goes on; then a resumes, then b.
		if err := New(bl, f.config(bl, 1, 0, 2*time.Hour)).Run(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if want := []string{"c", "a", "b"}; !slices.Equal(f.order, want) {
			t.Errorf("order %v, want %v", f.order, want)
		}
		if f.runs["a"] != 2 {
			t.Errorf("a ran %d times, want 2 (limited, then continued)", f.runs["a"])
		}
		// a's limit resets 1h after its first minute; then a and b run.
		if took := time.Since(start); took != time.Minute+time.Hour+2*time.Minute {
			t.Errorf("took %s", took)
		}
	})
}

func TestUsageLimitBeyondTheWaitEndsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("a", "b")
		f.adapters["a"] = []string{"claude"}
		f.adapters["b"] = []string{"claude"}
		f.limitOnce["a"] = 5 * time.Hour
		bl := &state.Backlog{}
		if err := New(bl, f.config(bl, 1, 0, time.Hour)).Run(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if len(bl.Beads) != 1 || bl.Beads[0].Status != statusLimited {
			t.Errorf("beads %+v: a should stay limited and b not be taken", bl.Beads)
		}
	})
}

func TestCancelStopsTheRunningBeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("a", "b", "c")
		f.took = time.Hour
		bl := &state.Backlog{}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Minute, cancel)
		if err := New(bl, f.config(bl, 2, 0, 0)).Run(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if len(bl.Beads) != 2 {
			t.Fatalf("%d beads taken", len(bl.Beads))
		}
		for _, b := range bl.Beads {
			if b.Status != string(state.StatusCancelled) {
				t.Errorf("%s: %s", b.ID, b.Status)
			}
		}
	})
}
