//go:build !linux

package runner

import "os/exec"

// pidfdWatch is false: there are no pidfds to poll.
var pidfdWatch = func() bool { return false }

// spawn starts cmd, with out and errOut as its stdout and stderr (which
// stay open, the caller's), for watchEach to wait for: there are no pidfds.
func spawn(cmd *exec.Cmd, out, errOut int) (pid, pidfd int, err error) {
	pid, err = startCmd(cmd, out, errOut)
	return pid, -1, err
}

// watch is never called without a pidfd.
func (h *headless) watch(_ int, fds []int, streams []string, onOutput func(Chunk)) {
	h.watchEach(fds, streams, onOutput)
}
