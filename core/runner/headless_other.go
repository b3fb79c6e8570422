//go:build !linux

package runner

import "os/exec"

// pidfdWatch is false: there are no pidfds to poll.
var pidfdWatch = func() bool { return false }

// spawn starts cmd, for watchEach to wait for: there are no pidfds.
func spawn(cmd *exec.Cmd) (pid, pidfd int, err error) {
	if err := cmd.Start(); err != nil {
		return 0, -1, err
	}
	return cmd.Process.Pid, -1, nil
}

// watch is never called without a pidfd.
func (h *headless) watch(_ int, fds []int, streams []string, onOutput func(Chunk)) {
	h.watchEach(fds, streams, onOutput)
}
