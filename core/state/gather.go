package state

import (
	"io"
	"sync"
	"time"
)

// gatherLimit is how much a GatheringWriter keeps before it writes anyway.
const gatherLimit = 64 << 10

// GatheringWriter keeps what is written to it and passes it on, in one
// write, no later than its delay after the first byte that waits. A step
// of a short workflow prints a few status lines and emits half a dozen
// events: a write each, to a pipe whose reader wakes for each or to a file
// on a disk, cost more than the step's own bookkeeping. Flush writes what
// waits at once; Close also stops the timer, and nothing is written after.
type GatheringWriter struct {
	mu     sync.Mutex
	out    io.Writer
	delay  time.Duration
	buf    []byte
	timer  *time.Timer
	closed bool
	err    error
}

// NewGatheringWriter gathers what is written for out, for up to delay.
func NewGatheringWriter(out io.Writer, delay time.Duration) *GatheringWriter {
	return &GatheringWriter{out: out, delay: delay}
}

// Write keeps p to be written with what follows it. It fails only with an
// error of an earlier write.
func (w *GatheringWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	if len(w.buf) == 0 {
		if w.timer == nil {
			w.timer = time.AfterFunc(w.delay, func() { _ = w.Flush() })
		} else {
			w.timer.Reset(w.delay)
		}
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= gatherLimit {
		w.flushLocked()
	}
	return len(p), w.err
}

// Flush writes what waits, now.
func (w *GatheringWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.err
}

// Close writes what waits and stops gathering.
func (w *GatheringWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.closed = true
	return w.err
}

func (w *GatheringWriter) flushLocked() {
	if len(w.buf) == 0 || w.err != nil || w.closed {
		w.buf = w.buf[:0]
		return
	}
	_, w.err = w.out.Write(w.buf)
	if cap(w.buf) > 2*gatherLimit {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
}
