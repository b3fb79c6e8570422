package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// makeHost starts the host of sh: bwrap as spec's start would run it, the
// server inside, and waits for the server's first word.
func makeHost(sh shape, spec Spec) (*boxHost, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	theirs := os.NewFile(uintptr(pair[1]), "|box")
	defer theirs.Close()
	idle := make(chan struct{})
	pinned := identify(sh.binds) // before bwrap binds them: a file replaced in between is seen changed
	started, err := startPiped(Spec{Command: sh.box[0], NoInput: true, MergeOutput: true}, func(in *os.File, out, errOut int) (*exec.Cmd, int, int, error) {
		cmd := &exec.Cmd{Path: sh.box[0], Args: sh.box, Dir: sh.dir, Env: []string{BoxServerEnv + "=1"}, Stdin: in, ExtraFiles: []*os.File{theirs},
			SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
		var pid, pidfd int
		boxStarts.RLock()
		defer boxStarts.RUnlock()
		err := spec.Sandbox.Start(func() (err error) {
			pid, pidfd, err = spawn(cmd, out, errOut)
			return err
		})
		if err == nil {
			leaders.Store(pid, (<-chan struct{})(idle))
		}
		return cmd, pid, pidfd, err
	})
	if err != nil {
		unix.Close(pair[0])
		return nil, err
	}
	b := &boxHost{key: sh.key, p: started, conn: pair[0], idle: idle, pinned: pinned}
	if reply, _, err := b.answer(boxAnswerWait); err != nil || !reply.Ready {
		b.discard()
		return nil, fmt.Errorf("the sandbox's server did not start: %v", err)
	}
	return b, nil
}

// errBroken is a host's server gone wrong.
var errBroken = errors.New("the kept sandbox's server ended")

// run starts req in the host with in, out and errOut as its streams: its
// pid here and a pidfd of it.
func (b *boxHost) run(req boxRequest, in *os.File, out, errOut int) (pid, pidfd int, err error) {
	msg := req.encode()
	if len(msg) > boxMaxRequest {
		return 0, -1, fmt.Errorf("a request of %d bytes", len(msg))
	}
	if err := b.send(msg, unix.UnixRights(int(in.Fd()), out, errOut)); err != nil {
		b.broken = true
		return 0, -1, err
	}
	reply, fds, err := b.answer(boxAnswerWait)
	switch {
	case err != nil:
		b.broken = true
		return 0, -1, err
	case reply.Err != "":
		return 0, -1, errors.New(reply.Err)
	case len(fds) != 1:
		b.broken = true
		for _, fd := range fds {
			unix.Close(fd)
		}
		return 0, -1, errBroken
	}
	pid = pidOfFD(fds[0])
	if err := b.send(boxAck, nil); err != nil || pid <= 0 {
		b.broken = true
		unix.Close(fds[0])
		return 0, -1, errBroken
	}
	return pid, fds[0], nil
}

// exited is the result of the host's start, whose pidfd polled as ended:
// the server tells it once everything else inside is gone. The host goes
// back to the warmer.
func (b *boxHost) exited() Result {
	reply, _, err := b.answer(boxWaitGone + boxAnswerWait)
	if err == nil && reply.Status == nil {
		err = errBroken
	}
	if err != nil {
		b.broken = true
		b.w.release(b)
		return Result{ExitCode: -1, Err: err}
	}
	r := statusResult(syscall.WaitStatus(*reply.Status))
	b.w.release(b)
	return r
}

func (b *boxHost) send(msg, oob []byte) error { return sendmsg(b.conn, msg, oob) }

// answer is the server's next message and the descriptors it carried.
func (b *boxHost) answer(wait time.Duration) (boxReply, []int, error) {
	var r boxReply
	deadline := time.Now().Add(wait)
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		fds := []unix.PollFd{{Fd: int32(b.conn), Events: unix.POLLIN}}
		left := time.Until(deadline)
		if left <= 0 {
			return r, nil, errBroken
		}
		if n, err := unix.Poll(fds, int(left/time.Millisecond)+1); err == unix.EINTR || err == nil && n == 0 {
			continue
		}
		n, oobn, _, _, err := unix.Recvmsg(b.conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil || n == 0 {
			return r, nil, errBroken
		}
		got := receivedFDs(oob[:oobn])
		if err := json.Unmarshal(buf[:n], &r); err != nil {
			for _, fd := range got {
				unix.Close(fd)
			}
			return r, nil, err
		}
		return r, got, nil
	}
}

// receivedFDs are the descriptors a message carried.
func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// pidOfFD is the pid, here, of the process a pidfd refers to (-1: it was
// reaped).
func pidOfFD(pidfd int) int {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return pid
			}
		}
	}
	return -1
}

// ended reports whether the host's bwrap exited while it waited.
func (b *boxHost) ended() bool {
	if b.p.pidfd < 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(b.p.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// discard ends a host: its group killed, its bwrap reaped (a child never
// reaped till now, so its pid is still its own), the pid namespace's init
// that comes back to us after it too.
func (b *boxHost) discard() {
	unix.Close(b.conn)
	var inits []procKey // the server, the sandbox's pid 1, as it is now
	for _, pid := range childrenOf(b.p.pid) {
		if st, ok := readStat(pid); ok {
			inits = append(inits, procKey{pid, st.start})
		}
	}
	_ = syscall.Kill(-b.p.pid, syscall.SIGKILL)
	if b.p.pidfd >= 0 {
		reap(b.p.pid, true)
		syscall.Close(b.p.pidfd)
	} else if b.p.cmd != nil {
		_ = b.p.cmd.Wait()
	}
	close(b.idle)
	// The server comes back to this child subreaper once bwrap is gone,
	// maybe only after the sweep below looked: it is waited for by pid.
	for _, k := range inits {
		reapReparented(k, sandboxSettle)
	}
	(&reaper{pgid: b.p.pid}).settleSandbox()
	for _, fd := range b.p.ours {
		syscall.Close(fd)
	}
	if b.p.stdin != nil {
		b.p.stdin.Close()
	}
}

// childrenOf are pid's children (its main thread's: bwrap forks from it).
func childrenOf(pid int) []int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return nil
	}
	return parsePids(b)
}

// reapReparented reaps k, a process on its way out whose parent ended,
// once it is this process's child (a child subreaper's), within limit. It
// is left alone where this process is no subreaper (the system's init
// reaps it), and once its pid is another process's (it was reaped
// elsewhere: a child of ours started since must not lose its status).
func reapReparented(k procKey, limit time.Duration) {
	if !subreaper.Load() {
		return
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		st, ok := readStat(k.pid)
		switch {
		case !ok || st.start != k.start:
			return // gone
		case st.ppid == selfPID:
			reap(k.pid, true)
			return
		}
		time.Sleep(time.Millisecond)
	}
}
