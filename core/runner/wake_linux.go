package runner

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Wake ends a WatchHere from another goroutine: an eventfd the watch polls
// with the process.
type Wake struct {
	mu sync.Mutex
	fd int
}

// NewWake makes a wake; without an eventfd, WatchHere declines it.
func NewWake() *Wake {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		fd = -1
	}
	return &Wake{fd: fd}
}

// Fire ends the WatchHere that polls w, now or as it begins. It may be
// called any number of times, from any goroutine, after Close too.
func (w *Wake) Fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		_, _ = unix.Write(w.fd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
}

// Close releases the eventfd; later Fires do nothing.
func (w *Wake) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// pollable is the fd a watch polls, -1 for none. Only the goroutine that
// watches reads it, and Close comes after its watch.
func (w *Wake) pollable() int {
	if w == nil {
		return -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fd
}
