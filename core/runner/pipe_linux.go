package runner

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// cloexecPipe is a pipe whose both ends close on exec, made so at once.
func cloexecPipe() ([2]int, error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return p, os.NewSyscallError("pipe2", err)
	}
	return p, nil
}

// outputPipe is a pipe for a child's output, both ends close-on-exec: ours,
// the read end, non-blocking; theirs, the write end, blocking as a child
// expects its stdout to be. Two system calls.
func outputPipe() (ours, theirs int, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return -1, -1, os.NewSyscallError("pipe2", err)
	}
	if _, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETFL, 0); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return -1, -1, os.NewSyscallError("fcntl", err)
	}
	return p[0], p[1], nil
}
