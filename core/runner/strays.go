package runner

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// subreaper is set once this process is a child subreaper.
var subreaper atomic.Bool

// leaders are the task processes this vibeteam started (pid → closed once
// reaped): its own children, never strays.
var leaders sync.Map

// tagged are, for each tag (Spec.Tag) this process started processes
// with, its task leaders not known to be reaped yet.
var tagged = struct {
	sync.Mutex
	leaders map[string][]<-chan struct{}
}{leaders: map[string][]<-chan struct{}{}}

// startedTagged notes a task leader started with tag, reaped once exited
// is closed.
func startedTagged(tag string, exited <-chan struct{}) {
	if tag == "" {
		return
	}
	tagged.Lock()
	defer tagged.Unlock()
	old := tagged.leaders[tag]
	live := old[:0]
	for _, c := range old {
		if !isClosed(c) {
			live = append(live, c)
		}
	}
	tagged.leaders[tag] = append(live, exited)
}

// noneTagged reports whether no process this vibeteam started with tag,
// nor any they started, can be alive, without reading /proc: it started
// some, their leaders are reaped, and, as a child subreaper, no orphan
// came back to it (noOrphans). Processes with the tag that it did not
// start (a killed run's) are not known here.
func noneTagged(tag string) bool {
	if !subreaper.Load() {
		return false
	}
	tagged.Lock()
	leaders, ok := tagged.leaders[tag]
	for _, c := range leaders {
		if !isClosed(c) {
			ok = false
			break
		}
	}
	tagged.Unlock()
	return ok && noOrphans()
}

// runs counts the runs under way in this process: a backlog runs several
// sessions at once, and a stray may then be the daemon of another run's
// task that still runs.
var runs atomic.Int32

// RunStarted counts a run as under way until the returned func is called.
func RunStarted() (ended func()) {
	runs.Add(1)
	var once sync.Once
	return func() { once.Do(func() { runs.Add(-1) }) }
}

// liveLeader reports whether pid is a task process of ours not yet reaped.
func liveLeader(pid int) bool {
	v, ok := leaders.Load(pid)
	if !ok {
		return false
	}
	if isClosed(v.(<-chan struct{})) {
		leaders.Delete(pid)
		return false
	}
	return true
}

// StopStrays stops the processes that left a task's process group and its
// session and dropped its environment tag (`env -i setsid daemon &`): as a
// child subreaper (BecomeSubreaper), vibeteam inherits them when their
// parent ends, so they are its children in a session of their own, which
// no child vibeteam starts itself is (task processes aside, which it
// knows). They get SIGTERM, then SIGKILL after grace, and are reaped.
//
// Call it only when no task runs (between the steps of a grimoire, after a
// stage, at the end of a run): a daemon of a task still running is its
// business until that task ends. It returns how many it stopped.
func StopStrays(grace time.Duration) int {
	if !subreaper.Load() {
		// Without it, nothing comes back to us: what is a child in a
		// session of its own is someone else's (a test's terminal).
		return 0
	}
	if runs.Load() > 1 {
		// Another run's task may be running: what looks like a stray may
		// be its daemon. The last run to end stops the strays.
		return 0
	}
	me, ok := selfStat()
	if !ok {
		return 0
	}
	mine := me.session
	stopped := 0
	// A stray's own children come to us when it dies: a few rounds.
	for round := 0; round < 4; round++ {
		var strays []int
		boxStarts.Lock() // a Warmer's box is a leader before it is seen here
		for _, pid := range children() {
			if liveLeader(pid) {
				continue
			}
			st, ok := readStat(pid)
			if !ok || st.ppid != selfPID {
				continue
			}
			// An ended orphan of a task's group (its group is neither its
			// own, as for every child vibeteam starts, nor vibeteam's) is
			// reaped, or it would stay a zombie.
			orphan := st.pgrp != pid && st.pgrp != me.pgrp
			if (st.state == 'Z' || st.state == 'X') && (orphan || st.session != mine) {
				reap(pid, false)
				continue
			}
			if st.session == mine {
				continue
			}
			strays = append(strays, pid)
		}
		boxStarts.Unlock()
		if len(strays) == 0 {
			break
		}
		stopped += len(strays)
		for _, pid := range strays {
			signalStray(pid, syscall.SIGTERM)
		}
		deadline := time.Now().Add(grace)
		for _, pid := range strays {
			for !reap(pid, false) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if !reap(pid, false) {
				signalStray(pid, syscall.SIGKILL)
				reap(pid, true)
			}
		}
	}
	return stopped
}

// signalStray signals a stray and, when it leads one, its process group.
func signalStray(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
	_ = syscall.Kill(pid, sig)
}

// reap waits for a stray child that ended (wait: until it does) and
// reports whether it is gone.
func reap(pid int, wait bool) bool {
	opts := syscall.WNOHANG
	if wait {
		opts = 0
	}
	var ws syscall.WaitStatus
	for {
		got, err := syscall.Wait4(pid, &ws, opts, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return true // not our child (any more): gone
		}
		return got == pid
	}
}

// children are the children of this process's main thread. Orphans are
// re-parented to a child subreaper's first live thread, which is the main
// one (it never exits before the process does): every stray is there. The
// other threads' children are processes this vibeteam started itself.
func children() []int {
	var buf [256]byte
	b, err := childrenList(buf[:])
	if err != nil {
		return nil
	}
	return parsePids(b)
}

// parsePids are the pids of a /proc children file.
func parsePids(b []byte) []int {
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// noOrphans reports whether nothing a task started can be alive outside
// its (empty) process group: as a child subreaper, every such process, or
// one of its ancestors, is a child of vibeteam's main thread once its own
// parent is gone (alive or a zombie, until reaped); so when that thread's
// only children are live task leaders, there is none. Without the
// subreaper it cannot tell: false, and /proc is read.
func noOrphans() bool {
	if !subreaper.Load() {
		return false
	}
	for _, pid := range children() {
		if !liveLeader(pid) {
			return false
		}
	}
	return true
}

// selfPID is this process's pid (os.Getpid is a system call each time),
// and selfPid the same as text: it does not change either.
var (
	selfPID = os.Getpid()
	selfPid = strconv.Itoa(selfPID)
)

// childrenFD is the main thread's children file, opened once: it is looked
// at after every step of a script, and a read from its start lists the
// children as they are then, without the path walk of an open.
var childrenFD = sync.OnceValues(func() (int, error) {
	return syscall.Open("/proc/self/task/"+selfPid+"/children", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
})

// childrenList reads the main thread's children file into buf (grown as
// needed).
func childrenList(buf []byte) ([]byte, error) {
	fd, err := childrenFD()
	if err != nil {
		return nil, err
	}
	return readFrom0(fd, buf)
}

// readFrom0 reads fd whole from its start into buf (grown as needed),
// whatever its offset: a /proc file read again from 0 says what is so now.
func readFrom0(fd int, buf []byte) ([]byte, error) {
	b := buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Pread(fd, b[len(b):cap(b)], int64(len(b)))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// selfStat is this process's own /proc stat, read once: its session and
// process group do not change while it runs.
var selfStat = sync.OnceValues(func() (procStat, bool) { return readStat(os.Getpid()) })
