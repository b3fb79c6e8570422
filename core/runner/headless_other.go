//go:build !linux

package runner

import (
	"os/exec"
	"time"
)

// pidfdWatch is false: there are no pidfds to poll.
var pidfdWatch = func() bool { return false }

// spawn starts cmd, with out and errOut as its stdout and stderr (which
// stay open, the caller's), for watchEach to wait for: there are no pidfds.
func spawn(cmd *exec.Cmd, out, errOut int) (pid, pidfd int, err error) {
	pid, err = startCmd(cmd, out, errOut)
	return pid, -1, err
}

// watch is never made without a pidfd: processes here are watched by
// watchEach.
type watch struct{}

func (h *headless) newWatch(int, []int, []string, func(Chunk)) *watch { return &watch{} }
func (w *watch) run()                                                 {}
func (w *watch) loop(int, time.Time) bool                             { return false }
func (w *watch) finish()                                              {}
