package runner

import (
	"os"
	"syscall"
)

// cloexecPipe is a pipe whose both ends close on exec, made so at once.
func cloexecPipe() ([2]int, error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return p, os.NewSyscallError("pipe2", err)
	}
	return p, nil
}
