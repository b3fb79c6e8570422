package engine

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// delivered records what an eventQueue delivers, by the events' Task.
type delivered struct {
	mu  sync.Mutex
	got []string
}

func (d *delivered) to(e state.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, e.Task)
}

func (d *delivered) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	got := d.got
	d.got = nil
	return got
}

func ev(task string) state.Event { return state.Event{Task: task, Payload: events.TaskEnd{}} }

func out(task string) state.Event { return state.Event{Task: task, Payload: events.TaskOut{Text: "x"}} }

func TestEventQueueHoldsUntilAFlushOutputOrItsDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var d delivered
		q := newEventQueue(d.to)
		q.add(ev("before")) // not held: at once
		if got := d.take(); !slices.Equal(got, []string{"before"}) {
			t.Fatalf("before hold: %v", got)
		}
		q.hold()
		q.add(ev("a"))
		q.add(ev("b"))
		if got := d.take(); got != nil {
			t.Fatalf("held events went out: %v", got)
		}
		q.flush()
		if got := d.take(); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("flush: %v", got)
		}
		q.add(ev("c"))
		q.add(out("output"))
		if got := d.take(); !slices.Equal(got, []string{"c", "output"}) {
			t.Fatalf("output goes out with what came before it: %v", got)
		}
		q.add(ev("late"))
		time.Sleep(eventDelay - time.Millisecond)
		if got := d.take(); got != nil {
			t.Fatalf("out before its delay: %v", got)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if got := d.take(); !slices.Equal(got, []string{"late"}) {
			t.Fatalf("after its delay: %v", got)
		}
		q.add(ev("last"))
		q.release()
		if got := d.take(); !slices.Equal(got, []string{"last"}) {
			t.Fatalf("release: %v", got)
		}
		q.add(ev("after"))
		if got := d.take(); !slices.Equal(got, []string{"after"}) {
			t.Fatalf("after release: %v", got)
		}
		// The timer armed for "last" was stopped by its flush: nothing is
		// delivered twice, and nothing is left.
		time.Sleep(2 * eventDelay)
		synctest.Wait()
		if got := d.take(); got != nil {
			t.Fatalf("delivered again: %v", got)
		}
	})
}

// TestEventQueueKeepsEachEmittersOrder: events from several goroutines,
// flushed by output, by flushes and by the delay, all arrive, each
// goroutine's in the order it emitted them.
func TestEventQueueKeepsEachEmittersOrder(t *testing.T) {
	t.Parallel()
	var d delivered
	q := newEventQueue(d.to)
	q.hold()
	const emitters, each = 4, 500
	var wg sync.WaitGroup
	for g := range emitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				name := fmt.Sprintf("%d/%d", g, i)
				switch i % 7 {
				case 3:
					q.add(out(name))
				case 5:
					q.add(ev(name))
					q.flush()
				default:
					q.add(ev(name))
				}
			}
		}()
	}
	wg.Wait()
	q.release()
	got := d.take()
	if len(got) != emitters*each {
		t.Fatalf("%d events delivered, want %d", len(got), emitters*each)
	}
	next := make([]int, emitters)
	for _, name := range got {
		var g, i int
		fmt.Sscanf(name, "%d/%d", &g, &i)
		if i != next[g] {
			t.Fatalf("emitter %d: event %d delivered when %d was due", g, i, next[g])
		}
		next[g]++
	}
}
