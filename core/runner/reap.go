package runner

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TaskEnv marks every process of a task run (Spec.Tag). A process group does
// not hold everything a task starts: `setsid cmd &`, daemons that detach
// (codex's app-server), so the environment, which every descendant inherits,
// is what finds the ones that left.
const TaskEnv = "VIBETEAM_TASK"

const (
	// exitGrace is the TERM → KILL escalation for what is left when the
	// leader exits by itself: nobody asked for a grace.
	exitGrace = 2 * time.Second
	// killWait bounds the wait for SIGKILLed processes to vanish. Only a
	// process stuck in the kernel outlives SIGKILL; Done must not hang on it.
	killWait = 5 * time.Second
	// drainWait bounds the wait for the output to reach EOF once everything
	// the task started is gone: a process we could not find (untagged,
	// outside the group) may still hold the pipe or the terminal.
	drainWait = 3 * time.Second
	maxPoll   = 100 * time.Millisecond
)

// withTag returns env with the task's tag added, leaving the caller's map
// alone.
func withTag(env map[string]string, tag string) map[string]string {
	if tag == "" {
		return env
	}
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = v
	}
	out[TaskEnv] = tag
	return out
}

// reaperTag is the tag the end-of-run sweep looks for.
func reaperTag(spec Spec) string {
	if spec.GroupOnly {
		return ""
	}
	return spec.Tag
}

// reaper ends everything a task started: its process group and every process
// carrying its tag, wherever it went.
type reaper struct {
	pgid int    // 0: do not match by group (an orphan whose leader is not ours)
	tag  string // "" matches no environment
	// since is the leader's start time; the task's processes, all its
	// descendants, are no older, so older processes are never read or hit.
	since uint64
	// wrapped says the leader is a sandbox's bwrap, which a SIGTERM would
	// kill at once, and with it (--die-with-parent) everything inside
	// before it could end by itself: it gets SIGKILL only, its processes
	// inside SIGTERM first as any others.
	wrapped bool
	// exited is closed once the leader is reaped. Until then its pid holds
	// the group id, so signalling the whole group cannot hit a stranger.
	exited <-chan struct{}

	once     sync.Once
	swept    chan struct{} // the sweep is over
	kill     chan struct{}
	killOnce sync.Once
}

// newReaper makes the reaper of the task whose leader is pid, started with
// envTag in its environment, looking for tag (envTag, or none).
func newReaper(since uint64, pid int, tag, envTag string, exited <-chan struct{}) *reaper {
	leaders.Store(pid, exited)
	startedTagged(envTag, exited)
	return &reaper{pgid: pid, tag: tag, since: since, exited: exited, swept: make(chan struct{}), kill: make(chan struct{})}
}

// end stops the task's processes with grace between SIGTERM and SIGKILL.
// Only the first call sweeps, with its grace; later ones wait for it, so a
// Stop's grace is not cut short by the leader's exit and Done waits for the
// sweep a Stop started.
func (r *reaper) end(grace time.Duration) {
	r.once.Do(func() {
		r.sweep(grace)
		close(r.swept)
	})
}

// killNow SIGKILLs everything now and makes a sweep in progress escalate.
// After the sweep it does nothing: the next run of the same task carries the
// same tag.
func (r *reaper) killNow() {
	if isClosed(r.swept) {
		return
	}
	r.killOnce.Do(func() { close(r.kill) })
	r.signal(syscall.SIGKILL, lazySpared(), nil)
}

func (r *reaper) sweep(grace time.Duration) {
	if r.wrapped && isClosed(r.exited) {
		r.settleSandbox()
	}
	spare := lazySpared()
	termed := make(map[procKey]bool)
	if !r.wrapped {
		r.signalGroup(syscall.SIGTERM)
	}
	if r.signal(syscall.SIGTERM, spare, termed) == 0 && isClosed(r.exited) {
		return
	}
	term := time.NewTimer(grace)
	defer term.Stop()
	var (
		exited  = r.exited
		kill    = r.kill
		giveUp  <-chan time.Time
		killing bool
		poll    = 5 * time.Millisecond
	)
	for {
		tick := time.NewTimer(poll)
		select {
		case <-term.C:
			killing = true
		case <-kill:
			killing, kill = true, nil
		case <-exited:
			exited = nil
		case <-giveUp:
			tick.Stop()
			return
		case <-tick.C:
			poll = min(2*poll, maxPoll)
		}
		tick.Stop()
		if killing && giveUp == nil {
			giveUp = time.After(killWait)
			poll = 5 * time.Millisecond
		}
		var n int
		if killing {
			// Again every round: a process may fork between two rounds.
			n = r.signal(syscall.SIGKILL, spare, nil)
		} else {
			n = r.signal(syscall.SIGTERM, spare, termed)
		}
		if n == 0 && isClosed(r.exited) {
			return
		}
	}
}

// sandboxSettle bounds the wait for a sandbox's init once its bwrap
// exited: the kernel ends it, and its namespaces, in milliseconds; more
// only on a machine so loaded that the sweep would wait as long.
const sandboxSettle = 2 * time.Second

// settleSandbox waits for, and reaps, what is left in the group of a
// sandbox whose bwrap (the leader) exited: the init of its pid namespace,
// which bwrap's exit kills (--die-with-parent) along with everything
// inside, and which comes back to this child subreaper. Its end empties
// the group, so the sweep sees the group gone without reading /proc or
// polling, and no zombie of it waits for StopStrays. Only a child of this
// process is waited for (its pid cannot be reused until it is reaped), and
// never a live task leader (which may hold the group's id anew).
func (r *reaper) settleSandbox() {
	if r.pgid <= 0 || !subreaper.Load() {
		return
	}
	for _, pid := range children() {
		if liveLeader(pid) {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.pgrp != r.pgid || st.ppid != selfPID {
			continue
		}
		if st.state != 'Z' && st.state != 'X' {
			waitGone(pid, sandboxSettle)
		}
		reap(pid, false)
	}
}

type procKey struct {
	pid   int
	start uint64
}

// signalGroup signals the whole group at once, which also reaches a member
// forked while /proc is being read, but only while the unreaped leader still
// holds the group's id.
func (r *reaper) signalGroup(sig syscall.Signal) {
	if r.pgid > 0 && !isClosed(r.exited) {
		_ = syscall.Kill(-r.pgid, sig)
	}
}

// signal sends sig to the task's live processes and returns how many there
// are. With termed, a process gets sig once only: a second SIGTERM means
// "quit now" to some programs. Each process is signalled right after it was
// identified, which leaves no room for its pid to be reused in between.
func (r *reaper) signal(sig syscall.Signal, spare func() map[int]bool, termed map[procKey]bool) int {
	if termed == nil {
		r.signalGroup(sig)
	}
	if r.pgid > 0 && isClosed(r.exited) && syscall.Kill(-r.pgid, 0) == syscall.ESRCH && (r.tag == "" || noOrphans()) {
		// Nothing is left in the group, and (for a tag) nothing anywhere:
		// no need to read /proc.
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		if r.pgid > 0 && syscall.Kill(-r.pgid, sig) == nil {
			return 1
		}
		return 0
	}
	var entry []byte
	if r.tag != "" {
		entry = []byte(TaskEnv + "=" + r.tag)
	}
	spares := spare()
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || spares[pid] {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.state == 'Z' || st.state == 'X' || st.start < r.since || st.kthread {
			// A kernel thread's environment reads empty, as a process's
			// in the middle of its exec does, which hasEnv waits out.
			continue
		}
		if !(r.pgid > 0 && st.pgrp == r.pgid) && (entry == nil || !hasEnv(pid, entry)) {
			continue
		}
		n++
		if r.wrapped && sig == syscall.SIGTERM && pid == r.pgid {
			continue
		}
		if termed != nil {
			k := procKey{pid, st.start}
			if termed[k] {
				continue
			}
			termed[k] = true
		}
		_ = syscall.Kill(pid, sig)
	}
	return n
}

type procStat struct {
	state   byte
	ppid    int
	pgrp    int
	session int
	start   uint64
	kthread bool // a kernel thread: never a task's, no environment to read
}

// pfKthread is the kernel's PF_KTHREAD process flag.
const pfKthread = 0x00200000

// readStat parses /proc/<pid>/stat; ok is false when the process vanished.
func readStat(pid int) (procStat, bool) {
	var buf [512]byte
	b, err := readProc("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ...; comm may contain spaces and parens.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) == 0 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	session, err4 := strconv.Atoi(f[3])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return procStat{}, false
	}
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, session: session, start: start, kthread: flags&pfKthread != 0}, true
}

// hasEnv reports whether the process's initial environment holds exactly
// entry ("KEY=value"). Unreadable means no: the process is gone or not ours
// to inspect.
func hasEnv(pid int, entry []byte) bool {
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	b, err := readProc(path, make([]byte, 0, 4096))
	for tries := 0; err == nil && len(b) == 0 && tries < 10; tries++ {
		// Empty: most likely read in the middle of its exec, whose new
		// environment is not in place yet (vfork lets the parent go on
		// before it is).
		time.Sleep(100 * time.Microsecond)
		b, err = readProc(path, b)
	}
	if err != nil {
		return false
	}
	for len(b) > 0 {
		kv := b
		if i := bytes.IndexByte(b, 0); i >= 0 {
			kv, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
}

// spared is this process and its ancestors: a vibeteam run inside a task
// (nested, or a test) carries a tag too and must not stop itself or the
// process that is waiting for it.
// lazySpared is spared, read once and only when /proc is walked.
func lazySpared() func() map[int]bool {
	var (
		once  sync.Once
		spare map[int]bool
	)
	return func() map[int]bool {
		once.Do(func() { spare = spared() })
		return spare
	}
}

func spared() map[int]bool {
	spare := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !spare[pid]; {
		spare[pid] = true
		st, ok := readStat(pid)
		if !ok {
			break
		}
		pid = st.ppid
	}
	return spare
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
