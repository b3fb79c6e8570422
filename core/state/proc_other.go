//go:build !unix

package state

import "os"

// processAlive asks the OS for the process; on Windows FindProcess fails for
// a pid that does not exist.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

type flockResult int

const (
	flockAcquired flockResult = iota
	flockBusy
	flockUnsupported
)

// Without flock the pid+host record alone decides who holds a lock.
func flockTry(*os.File) flockResult { return flockUnsupported }

func flockWait(*os.File) error { return errFlockUnsupported }

// Directories cannot be fsynced here; rename durability is left to the OS.
func syncDir(string) error { return nil }
