//go:build !linux

package runner

// bootTicks is 0 where there is no /proc: nothing is filtered by start time.
func bootTicks() uint64 { return 0 }
