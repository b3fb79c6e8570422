package runner

import (
	"time"

	"golang.org/x/sys/unix"
)

// waitGone waits, at most limit, for pid (a child) to end.
func waitGone(pid int, limit time.Duration) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already, or no pidfds: the sweep polls
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(limit)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(left/time.Millisecond)+1)
		if err != unix.EINTR && (err != nil || n > 0) {
			return
		}
	}
}
