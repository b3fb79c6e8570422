package runner

import (
	"encoding/json"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The server of a kept sandbox (a Warmer's host): this binary, started by
// the host's bwrap with BoxServerEnv set, serves the run's starts of one
// shape from inside the sandbox, one at a time, on the socket at its fd 3.
// Each start is a request (its path, argv, environment and directory) with
// its three standard streams; the server starts it in a session of its own
// and answers with the process's pidfd, then, once it has exited and every
// other process of the sandbox is gone, with its wait status.
//
// It is checked for before anything else of the program runs (init), so
// that every binary that links this package, a test binary too, serves
// rather than doing its own work inside the sandbox.
func init() {
	if os.Getenv(BoxServerEnv) == "1" {
		os.Exit(serveBox(boxServerFD))
	}
}

// boxServerFD is the server's end of the host's socket.
const boxServerFD = 3

// boxWaitGone bounds the wait for a start's leftovers to vanish after
// SIGKILL: only a process stuck in the kernel outlives it.
const boxWaitGone = 5 * time.Second

func serveBox(fd int) int {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return 2
	}
	unix.CloseOnExec(fd) // the starts get their three streams, and nothing else
	// Nothing a start runs may read or trace the server (it speaks for the
	// starts after it): not dumpable, it is ptraced only with
	// CAP_SYS_PTRACE, which no sandbox keeps.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// Every signal handled, and dropped: as the sandbox's pid 1, it gets
	// from inside only the signals it handles, so no start can end it, not
	// even with SIGKILL. Handled, not ignored: an ignored signal stays
	// ignored across exec, and the starts must get the default.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs)
	go func() {
		for range sigs {
		}
	}()
	if sendReply(fd, boxReply{Ready: true}, -1) != nil {
		return 1
	}
	buf := make([]byte, boxMaxRequest)
	oob := make([]byte, unix.CmsgSpace(3*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0 // the host ended
		}
		fds := receivedFDs(oob[:oobn])
		if !serveOne(fd, buf[:n], fds) {
			return 1
		}
	}
}

// serveOne starts one request and answers it; false: the host is gone.
func serveOne(fd int, msg []byte, fds []int) bool {
	req, err := decodeRequest(msg)
	if err == nil && len(fds) != 3 {
		err = syscall.EBADMSG
	}
	pidfd := -1
	var pid int
	if err == nil {
		files := []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])}
		pid, err = syscall.ForkExec(req.Path, req.Argv, &syscall.ProcAttr{Dir: req.Dir, Env: req.Env, Files: files,
			Sys: &syscall.SysProcAttr{Setsid: true, PidFD: &pidfd}})
	}
	for _, f := range fds {
		unix.Close(f)
	}
	if err != nil {
		return sendReply(fd, boxReply{Err: (&os.PathError{Op: "fork/exec", Path: req.Path, Err: err}).Error()}, -1) == nil
	}
	sent := sendReply(fd, boxReply{Pid: pid}, pidfd)
	unix.Close(pidfd)
	if sent == nil {
		sent = awaitAck(fd) // the host reads the pid before it is reaped
	}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	clearBox()
	for _, dir := range boxPrivate {
		emptyOwn(dir)
	}
	if sent != nil {
		return false
	}
	status := uint32(ws)
	return sendReply(fd, boxReply{Status: &status}, -1) == nil
}

// clearBox ends every process of the sandbox but its init and the server,
// as the end of a sandbox's pid namespace would: what a start left behind
// (`cmd &`, a daemon) does not outlive it, nor see the next. The server is
// the namespace's init: the orphans are its to reap.
func clearBox() {
	self := os.Getpid()
	deadline := time.Now().Add(boxWaitGone)
	for {
		_ = syscall.Kill(-1, syscall.SIGKILL) // all but init and the caller
		reapOrphans()
		if !othersLeft(self) || time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// boxPrivate are the sandbox's own empty directories (its tmpfs), which a
// cold start gets empty: each start of a host does too.
var boxPrivate = []string{"/tmp", "/run", "/var/run", "/dev/shm"}

// emptyOwn removes what is in dir on dir's own file system, and nothing on
// another: a mount under it (the work directory, a program shown
// read-only) is the host's, and stays.
func emptyOwn(dir string) {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	removeOnDev(dir, st.Dev)
}

func removeOnDev(dir string, dev uint64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := dir + "/" + e.Name()
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil || st.Dev != dev {
			continue // a mount point: not ours
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			removeOnDev(path, dev)
			_ = unix.Rmdir(path) // fails where a mount is under it: kept
			continue
		}
		_ = unix.Unlink(path)
	}
}

// reapOrphans reaps what ended and came to the server, the sandbox's init
// (a start's orphans), and what is left of a bwrap init where there is one.
func reapOrphans() {
	var ws syscall.WaitStatus
	for {
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}

// othersLeft reports whether the sandbox (its /proc) holds a process other
// than its init and self. A zombie counts until init reaps it.
func othersLeft(self int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != 1 && pid != self {
			return true
		}
	}
	return false
}

// awaitAck waits for the host's acknowledgement of a start.
func awaitAck(fd int) error {
	buf := make([]byte, 512)
	for {
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n == 0:
			return unix.EPIPE
		}
		return nil
	}
}

func sendReply(fd int, r boxReply, passFD int) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var oob []byte
	if passFD >= 0 {
		oob = unix.UnixRights(passFD)
	}
	return sendmsg(fd, b, oob)
}

// sendmsg sends one message of the host's socket, again where a signal
// cut it short.
func sendmsg(fd int, msg, oob []byte) error {
	for {
		err := unix.Sendmsg(fd, msg, oob, nil, 0)
		if err != unix.EINTR {
			return err
		}
	}
}
