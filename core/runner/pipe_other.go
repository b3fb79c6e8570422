//go:build !linux

package runner

import (
	"os"
	"syscall"
)

// cloexecPipe is a pipe whose both ends close on exec. Without pipe2, the
// fork lock keeps a start elsewhere from inheriting it in between.
func cloexecPipe() ([2]int, error) {
	var p [2]int
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := syscall.Pipe(p[:]); err != nil {
		return p, os.NewSyscallError("pipe", err)
	}
	syscall.CloseOnExec(p[0])
	syscall.CloseOnExec(p[1])
	return p, nil
}
