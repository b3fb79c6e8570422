package runner

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// A step of a script is often a process that lives a millisecond: what
// vibeteam does around each start (a PATH search, files opened, fds put in
// the poller and taken out again) is then a good part of its cost. The
// helpers here keep that to what the start needs.

// resolved caches PATH lookups, by command and PATH.
var resolved sync.Map // string → string

// command is the exec.Cmd of spec, with in as its stdin, without a PATH
// search per start: a command found once is taken as found (cached), and a
// start that fails because it is not there any more looks again (forget).
// Args[0] stays the name as given, as exec.Command leaves it.
func command(spec Spec, in *os.File) (cmd *exec.Cmd, cached bool) {
	name := spec.Command
	key := name + "\x00" + os.Getenv("PATH")
	if strings.ContainsRune(name, '/') {
		cmd = exec.Command(name, spec.Args...)
	} else if v, ok := resolved.Load(key); ok {
		cmd, cached = &exec.Cmd{Path: v.(string), Args: append([]string{name}, spec.Args...)}, true
	} else {
		cmd = exec.Command(name, spec.Args...)
		if cmd.Err == nil && filepath.IsAbs(cmd.Path) {
			resolved.Store(key, cmd.Path)
		}
	}
	cmd.Dir = spec.Dir
	cmd.Env = childEnv(spec.Env, spec.Dir, spec.Tag)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdin = in
	sandboxed(cmd, spec, spec.Env)
	return cmd, cached
}

// forget drops what command found for name.
func forget(name string) { resolved.Delete(name + "\x00" + os.Getenv("PATH")) }

// staleCommand reports whether a start failed as one of a command that is
// no longer where it was found, or no longer a program.
func staleCommand(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC)
}

// startCmd starts cmd with out and errOut (raw fds, the same one for both
// when the output is merged) as its stdout and stderr. They stay open, the
// caller's: cmd gets copies of them.
func startCmd(cmd *exec.Cmd, out, errOut int) (pid int, err error) {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, fd := range []int{out, errOut} {
		if fd == out && len(files) == 1 {
			files = append(files, files[0])
			continue
		}
		syscall.ForkLock.RLock() // a start elsewhere must not inherit it
		dup, err := syscall.Dup(fd)
		if err == nil {
			syscall.CloseOnExec(dup)
		}
		syscall.ForkLock.RUnlock()
		if err != nil {
			return 0, os.NewSyscallError("dup", err)
		}
		files = append(files, os.NewFile(uintptr(dup), "|output"))
	}
	cmd.Stdout, cmd.Stderr = files[0], files[1]
	if files[1] == files[0] {
		files = files[:1]
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

// inputPipe is a pipe for a child's stdin, both ends close-on-exec: ours,
// the write end, pollable; theirs, the read end, stays out of the poller
// (the child has it as a blocking fd anyway).
func inputPipe() (ours, theirs *os.File, err error) {
	p, err := cloexecPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.SetNonblock(p[1], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("setnonblock", err)
	}
	return os.NewFile(uintptr(p[1]), "|ours"), os.NewFile(uintptr(p[0]), "|theirs"), nil
}

// devNull is /dev/null, opened once for every start without input
// (exec.Cmd opens it anew for each otherwise).
var devNull = sync.OnceValues(func() (*os.File, error) { return os.Open(os.DevNull) })

// readProc reads a small /proc file with plain system calls: os.ReadFile
// tries the poller and stats the file first, which doubles the calls.
func readProc(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	return readFrom0(fd, buf)
}
