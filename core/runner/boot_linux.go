package runner

import "golang.org/x/sys/unix"

// bootTicks is now in the clock of /proc/<pid>/stat's start time (ticks of
// 1/100 s since boot). Taken just before a spawn, it is a lower bound of
// the new process's start time, without reading /proc after the spawn.
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Sec)*100 + uint64(ts.Nsec)/10_000_000
}
