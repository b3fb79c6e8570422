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

// outputPipe is a pipe for a child's output, both ends close-on-exec: ours,
// the read end, non-blocking; theirs, the write end, blocking.
func outputPipe() (ours, theirs int, err error) {
	p, err := cloexecPipe()
	if err != nil {
		return -1, -1, err
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return -1, -1, os.NewSyscallError("setnonblock", err)
	}
	return p[0], p[1], nil
}
