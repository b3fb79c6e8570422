package runner

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pidfdWatch reports whether a headless process's exit can be polled for
// together with its output (pidfds: Linux 5.3 and later).
var pidfdWatch = sync.OnceValue(func() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})

// spawn starts cmd, with out and errOut as its stdout and stderr (which
// stay open, the caller's). Where pidfds can be polled, it is started as
// os.StartProcess would, with a pidfd of it (for watch), but without the
// os.Process and exec.Cmd bookkeeping, which cost a step of a script
// about an eighth of its start: a copy of the environment deduplicated, a
// second pidfd, os.Files made for the fds and taken apart again.
// Elsewhere (pidfd -1) cmd is started, and waited for by watchEach.
func spawn(cmd *exec.Cmd, out, errOut int) (pid, pidfd int, err error) {
	if !pidfdWatch() || cmd.Err != nil {
		pid, err := startCmd(cmd, out, errOut)
		return pid, -1, err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	attr := *cmd.SysProcAttr
	pidfd = -1
	attr.PidFD = &pidfd
	files := []uintptr{cmd.Stdin.(*os.File).Fd(), uintptr(out), uintptr(errOut)}
	for _, f := range cmd.ExtraFiles {
		files = append(files, f.Fd())
	}
	pid, err = syscall.ForkExec(cmd.Path, cmd.Args, &syscall.ProcAttr{Dir: cmd.Dir, Env: env, Files: files, Sys: &attr})
	if err != nil {
		// As exec.Cmd says it.
		return 0, -1, &os.PathError{Op: "fork/exec", Path: cmd.Path, Err: err}
	}
	return pid, pidfd, nil
}

// watch is the one watcher of a headless process on Linux: one poll finds
// both its output and its leader's exit. A command that prints a line and
// exits then wakes one thread, where a reader, a waiter and the poller's
// thread handing over to each other wake three, each a cross-CPU wake-up
// on the path from one step to the next: in a run of short steps, that was
// a tenth of the time. It runs on a goroutine of its own, or on the
// caller's (Spec.WatchHere), and can move from the latter to the former
// between two polls.
type watch struct {
	h        *headless
	fds      []int
	streams  []string
	onOutput func(Chunk)
	bp       *[]byte
	strip    []Stripper
	clean    []byte
	// polled are fds, then the leader's pidfd, then a wake's eventfd (-1
	// but while the caller watches).
	polled []unix.PollFd
	open   int
	exited bool
	giveUp time.Time // once exited: the drain's end
}

func (h *headless) newWatch(pidfd int, fds []int, streams []string, onOutput func(Chunk)) *watch {
	polled := make([]unix.PollFd, 0, len(fds)+2)
	for _, fd := range fds {
		polled = append(polled, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	polled = append(polled, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN}, unix.PollFd{Fd: -1, Events: unix.POLLIN})
	return &watch{h: h, fds: fds, streams: streams, onOutput: onOutput, bp: readBufs.Get().(*[]byte),
		strip: make([]Stripper, len(fds)), polled: polled, open: len(fds)}
}

// run watches the process to its end.
func (w *watch) run() {
	w.loop(-1, time.Time{})
	w.finish()
}

// loop watches until the process is done (true), or until wake (an fd, -1
// for none) is readable or deadline (if not zero) passes (false).
func (w *watch) loop(wake int, deadline time.Time) (done bool) {
	leader, woken := len(w.fds), len(w.fds)+1
	w.polled[woken].Fd = int32(wake)
	defer func() { w.polled[woken].Fd = -1 }()
	buf := *w.bp
	for w.open > 0 || !w.exited {
		timeout := -1
		if w.exited {
			left := time.Until(w.giveUp)
			if left <= 0 {
				break // held by a process we could not find: give up the rest
			}
			timeout = int(left/time.Millisecond) + 1
		}
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return false
			}
			if ms := int(left/time.Millisecond) + 1; timeout < 0 || ms < timeout {
				timeout = ms
			}
		}
		n, err := unix.Poll(w.polled, timeout)
		if err == unix.EINTR || err == nil && n == 0 {
			continue
		}
		if err != nil {
			// Not seen: poll fails only on bad arguments. Wait as the
			// goroutines would, without the output.
			w.polled[leader].Revents = unix.POLLIN
			w.polled[woken].Revents = 0
			w.open = 0
		}
		for i, fd := range w.fds {
			if w.polled[i].Fd < 0 || w.polled[i].Revents == 0 {
				continue
			}
			if !w.h.readSome(fd, w.streams[i], buf, &w.strip[i], &w.clean, w.onOutput) {
				continue
			}
			unix.Close(fd)
			w.polled[i].Fd = -1
			w.open--
		}
		if !w.exited && w.polled[leader].Revents != 0 {
			if w.h.host != nil {
				w.h.result = w.h.host.exited()
			} else {
				w.h.result = reapLeader(w.h.pid)
			}
			unix.Close(int(w.polled[leader].Fd))
			w.polled[leader].Fd = -1
			w.exited = true
			close(w.h.exited)
			// Whatever the agent left behind goes with it, so nothing
			// outlives the task; and before the drain, because what it
			// left may hold the pipes open.
			w.h.reaper.end(exitGrace)
			w.giveUp = time.Now().Add(drainWait)
		}
		if w.polled[woken].Revents != 0 && (w.open > 0 || !w.exited) {
			return false
		}
	}
	return true
}

// finish closes what the drain left open and tells the process's end.
func (w *watch) finish() {
	for i, fd := range w.fds {
		if w.polled[i].Fd >= 0 {
			unix.Close(fd)
		}
	}
	readBufs.Put(w.bp) // onOutput keeps no Raw
	w.h.closeInput()
	close(w.h.done)
}

// readSome reads what fd holds, a few chunks at most (a flood must not
// keep the exit from being seen), and reports whether the stream ended.
func (h *headless) readSome(fd int, stream string, buf []byte, strip *Stripper, clean *[]byte, onOutput func(Chunk)) (ended bool) {
	for range 16 {
		n, err := syscall.Read(fd, buf)
		switch {
		case n > 0:
			if onOutput != nil {
				*clean = strip.Strip((*clean)[:0], buf[:n])
				onOutput(Chunk{Stream: stream, Raw: buf[:n], Clean: *clean})
			}
		case err == syscall.EAGAIN:
			return false
		case err == syscall.EINTR:
		default: // EOF, or an error that ends the stream as well
			return true
		}
	}
	return false
}

// reapLeader waits for pid, whose pidfd polled as ended.
func reapLeader(pid int) Result {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		switch err {
		case nil:
			return statusResult(ws)
		case syscall.EINTR:
			continue
		default:
			return Result{ExitCode: -1, Err: os.NewSyscallError("wait4", err)}
		}
	}
}
