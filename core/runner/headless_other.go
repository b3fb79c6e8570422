//go:build !linux

package runner

import "syscall"

// pidfdWatch is false: there are no pidfds to poll.
var pidfdWatch = func() bool { return false }

// askPidfd does nothing: there are no pidfds, and the fd stays -1.
func askPidfd(*syscall.SysProcAttr, *int) {}

// watch is never called without a pidfd.
func (h *headless) watch(_ int, fds []int, streams []string, onOutput func(Chunk)) {
	h.watchEach(fds, streams, onOutput)
}
