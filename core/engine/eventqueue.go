package engine

import (
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// eventDelay bounds how long an event waits to be delivered while a run
// holds them: the time the event log and a stderr without a terminal
// gather their writes too.
const eventDelay = 20 * time.Millisecond

// eventQueue delivers a run's events in the order they were emitted, but
// not always at once. Between one process's end and the next one's start,
// a run emits half a dozen events (the task's end, the stage's end and the
// next one's start, ...): delivered as they come, the display and the
// event log would sit on the path from one step to the next, in a run of
// short steps a good part of its time. While a run holds them (hold), the
// events wait instead, and go out together once the next process has
// started (flush, where a task or a step starts waiting for its process),
// with a process's output (which goes out at once, and what waits before
// it), or eventDelay after the first of them, whichever comes first. Their
// times are those of their emission.
type eventQueue struct {
	to func(state.Event)

	mu      sync.Mutex
	holding bool
	pending []state.Event
	timer   *time.Timer // flushes eventDelay after the first held event
	armed   bool

	// delivering is held while a batch goes out: batches go out one at a
	// time, in order.
	delivering sync.Mutex
}

func newEventQueue(to func(state.Event)) *eventQueue {
	q := &eventQueue{to: to}
	q.timer = time.AfterFunc(time.Hour, q.flush)
	q.timer.Stop()
	return q
}

// add delivers e, or holds it for the next flush.
func (q *eventQueue) add(e state.Event) {
	q.mu.Lock()
	if !q.holding && len(q.pending) == 0 {
		q.mu.Unlock()
		q.delivering.Lock()
		q.to(e)
		q.delivering.Unlock()
		return
	}
	q.pending = append(q.pending, e)
	_, output := e.Payload.(events.TaskOut)
	if !output && !q.armed {
		q.armed = true
		q.timer.Reset(eventDelay)
	}
	q.mu.Unlock()
	if output {
		// Output is shown as it comes, after what came before it.
		q.flush()
	}
}

// flush delivers the held events.
func (q *eventQueue) flush() {
	q.delivering.Lock()
	defer q.delivering.Unlock()
	q.mu.Lock()
	batch := q.pending
	q.pending = nil
	if q.armed {
		q.armed = false
		q.timer.Stop()
	}
	q.mu.Unlock()
	for _, e := range batch {
		q.to(e)
	}
}

// hold makes the queue hold events until they are flushed; release
// delivers what it holds and makes it deliver events as they come again.
func (q *eventQueue) hold() {
	q.mu.Lock()
	q.holding = true
	q.mu.Unlock()
}

func (q *eventQueue) release() {
	q.mu.Lock()
	q.holding = false
	q.mu.Unlock()
	q.flush()
}
