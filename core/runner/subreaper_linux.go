package runner

import "golang.org/x/sys/unix"

// BecomeSubreaper makes this process the child subreaper of what it
// starts: a process whose parent ends is re-parented to vibeteam rather
// than to init, so a daemon that left its task's group and session is
// still found (StopStrays).
//
// Only the vibeteam command does this (main), not a program that runs
// vibeteam's code in-process, whose other children StopStrays would take
// for strays.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	subreaper.Store(true)
	return nil
}
