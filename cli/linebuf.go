package cli

import (
	"io"
	"sync"
	"time"
)

// lineDelay is how long a status line may wait before it is written when
// stderr is not a terminal.
const lineDelay = 20 * time.Millisecond

// delayedWriter gathers what is written to it and passes it on at most
// lineDelay later, in one write. Without a terminal, stderr is usually a
// pipe read by CI or a test: a write per status line wakes the reader each
// time, and a short workflow of many steps spent a fifth of its time there.
// Nothing waits longer than lineDelay, and Flush (at the end of a run, and
// before anything else is printed) keeps the order of the stream.
type delayedWriter struct {
	mu    sync.Mutex
	out   io.Writer
	buf   []byte
	timer *time.Timer
	err   error
}

func newDelayedWriter(out io.Writer) *delayedWriter {
	w := &delayedWriter{out: out}
	w.timer = time.AfterFunc(time.Hour, func() { _ = w.Flush() })
	w.timer.Stop()
	return w
}

func (w *delayedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if len(w.buf) == 0 {
		w.timer.Reset(lineDelay)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= 32<<10 {
		w.flushLocked()
	}
	return len(p), nil
}

// Flush writes out what waits, now.
func (w *delayedWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.err
}

func (w *delayedWriter) flushLocked() {
	w.timer.Stop()
	if len(w.buf) == 0 || w.err != nil {
		w.buf = w.buf[:0]
		return
	}
	_, w.err = w.out.Write(w.buf)
	if cap(w.buf) > 64<<10 {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
}
