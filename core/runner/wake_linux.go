package runner

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Wake ends a WatchHere from another goroutine: an eventfd the watch polls
// with the process. The eventfd is made when the watch begins, after the
// process's start rather than on the way to it; a Fire before that is
// kept for it.
type Wake struct {
	mu     sync.Mutex
	fd     int // -1 until the watch begins, and after Close
	fired  bool
	closed bool
}

// NewWake makes a wake.
func NewWake() *Wake { return &Wake{fd: -1} }

// Fire ends the WatchHere that polls w, now or as it begins. It may be
// called any number of times, from any goroutine, after Close too.
func (w *Wake) Fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fired = true
	if w.fd >= 0 {
		w.signal()
	}
}

// Close releases the eventfd; later Fires do nothing.
func (w *Wake) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// pollable is the fd a watch polls, made on the first call; -1 for none
// (no wake, closed, or no eventfd to be had). Close comes after the watch.
func (w *Wake) pollable() int {
	if w == nil {
		return -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 && !w.closed {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			return -1
		}
		w.fd = fd
		if w.fired {
			w.signal()
		}
	}
	return w.fd
}

// signal adds one to the eventfd's count: it reads as ready from then on.
func (w *Wake) signal() { _, _ = unix.Write(w.fd, []byte{1, 0, 0, 0, 0, 0, 0, 0}) }
