package runner

import (
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

// command is exec.Command without a PATH search per start: a command found
// once is found again with one stat (gone or no longer executable: searched
// anew). Args[0] stays the name as given, as exec.Command leaves it.
func command(name string, args ...string) *exec.Cmd {
	if strings.ContainsRune(name, '/') {
		return exec.Command(name, args...)
	}
	key := name + "\x00" + os.Getenv("PATH")
	if v, ok := resolved.Load(key); ok {
		path := v.(string)
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return &exec.Cmd{Path: path, Args: append([]string{name}, args...)}
		}
		resolved.Delete(key)
	}
	cmd := exec.Command(name, args...)
	if cmd.Err == nil && filepath.IsAbs(cmd.Path) {
		resolved.Store(key, cmd.Path)
	}
	return cmd
}

// childPipe is a pipe whose end given to the child stays out of the
// poller (the child has it as a blocking fd anyway); ours is pollable.
// childReads: the child reads (its stdin) rather than writes (its output).
func childPipe(childReads bool) (ours, theirs *os.File, err error) {
	p, err := cloexecPipe()
	if err != nil {
		return nil, nil, err
	}
	o, t := p[0], p[1] // we read, the child writes
	if childReads {
		o, t = p[1], p[0]
	}
	if err := syscall.SetNonblock(o, true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("setnonblock", err)
	}
	return os.NewFile(uintptr(o), "|ours"), os.NewFile(uintptr(t), "|theirs"), nil
}

// outputPipe is a pipe for a child's output: ours, the read end, a raw
// non-blocking fd; theirs, the write end, blocking as the child wants it.
func outputPipe() (ours int, theirs *os.File, err error) {
	p, err := cloexecPipe()
	if err != nil {
		return -1, nil, err
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return -1, nil, os.NewSyscallError("setnonblock", err)
	}
	return p[0], os.NewFile(uintptr(p[1]), "|theirs"), nil
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
