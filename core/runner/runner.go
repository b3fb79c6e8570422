// Package runner starts agent processes, headless (pipes) or in a
// pseudo-terminal, and streams their output to the caller.
package runner

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vibeteam/vibeteam/core/sandbox"
)

// DefaultGrace is how long a stopped process group gets between SIGTERM and
// SIGKILL.
const DefaultGrace = 10 * time.Second

// Spec describes one process to start.
type Spec struct {
	Command string
	Args    []string
	Dir     string
	Env     map[string]string // merged over os.Environ()
	Cols    int
	Rows    int
	// Tag, when set, is put in the child's environment as VIBETEAM_TASK;
	// whatever carries it when the task ends is stopped with the task, even
	// outside the process group. Runs sharing a tag must not overlap.
	Tag string
	// GroupOnly keeps the end-of-run sweep to the process group (cheap:
	// no /proc walk when the group is empty); the tagged processes that
	// left it are for a StopTagged later. For runs many and short, such
	// as script steps.
	GroupOnly bool
	// NoInput gives the process /dev/null as stdin (Send fails), and
	// MergeOutput one pipe for stdout and stderr, in the order written
	// (Chunk.Stream is "output"): a script's output as a terminal shows it.
	NoInput     bool
	MergeOutput bool
	// WatchHere leaves the watching of a headless process (its output, its
	// exit) to its caller, who calls WatchHere on its own goroutine as soon
	// as the start returns: the end of a short step then wakes no other
	// goroutine on the way to the next start. Anything that waits for the
	// process (Done, Stop) has it watched by a goroutine of its own instead.
	WatchHere bool
	// Sandbox, when set, starts the process inside it (core/sandbox): its
	// command wrapped, its environment cut down to what the plan keeps.
	Sandbox *sandbox.Plan
	// Warm, with a Sandbox, takes the sandbox the warmer made ahead for a
	// start of this shape, if one waits, and has one made for the next:
	// for the starts that come again and again in one place (a script's
	// steps in one worktree). nil: every start makes its own.
	Warm *Warmer
}

// Chunk is one piece of output. Raw and Clean are valid only for the
// duration of the callback.
type Chunk struct {
	Stream string // stdout | stderr | pty
	Raw    []byte
	Clean  []byte // Raw without terminal control sequences
}

// Result is how a process ended.
type Result struct {
	ExitCode int    // -1 when killed by a signal or never started
	Signal   string // e.g. "terminated" when killed by a signal
	Err      error  // start failure or wait error
}

// Success reports a clean exit 0.
func (r Result) Success() bool { return r.Err == nil && r.ExitCode == 0 && r.Signal == "" }

// Process is a started agent process, headless or in a PTY.
type Process interface {
	Pid() int
	// Send writes text to the process's input (stdin or the PTY).
	Send(text string) error
	// CloseInput signals end of input (headless: closes stdin).
	CloseInput() error
	// Done is closed when the process has exited and its output is drained.
	Done() <-chan struct{}
	// Result is valid after Done is closed.
	Result() Result
	// Stop sends SIGTERM to the process group and the processes carrying
	// the Tag, waits up to grace, then SIGKILLs them. It returns once the
	// process has been reaped and the others are gone (a few seconds after
	// SIGKILL at most).
	Stop(grace time.Duration)
	// Kill SIGKILLs the group and the tagged processes now (a second
	// interrupt); a Stop in progress then returns.
	Kill()
}

// HereWatcher is a process started with Spec.WatchHere.
type HereWatcher interface {
	// WatchHere watches the process on the calling goroutine, onOutput
	// called there, until it is done (true), or until wake fires or the
	// deadline (if not zero) passes (false): a goroutine of its own then
	// watches it, as without Spec.WatchHere, and Done tells its end. It is
	// false at once when the process is watched already, or wake cannot be
	// polled.
	WatchHere(wake *Wake, deadline time.Time) bool
}

// Ended reports whether p is done, without having a process whose caller
// is to watch it (Spec.WatchHere) watched by a goroutine of its own.
func Ended(p Process) bool {
	var done <-chan struct{}
	if h, ok := p.(*headless); ok {
		done = h.done
	} else {
		done = p.Done()
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// withPWD returns env with PWD set to the child's directory: programs
// (opencode, shells) trust PWD over getcwd, and vibeteam's own PWD would
// send them to the wrong place.
func withPWD(env map[string]string, dir string) map[string]string {
	if dir == "" {
		return env
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = v
	}
	out["PWD"] = dir
	return out
}

// lastEnv is the environment childEnv made last, and what it made it of:
// the steps of a script all get the same one, and the tasks of a stage
// workflow the same but for their tag (at tagAt; -1 without one).
var lastEnv struct {
	sync.Mutex
	base   []string
	env    map[string]string
	dir    string
	tagged bool
	out    []string
	tagAt  int
}

// childEnv is mergedEnv(withPWD(withTag(env, tag), dir)), made again only
// when env, dir, whether there is a tag, or vibeteam's own environment
// changed: otherwise the last one, with this tag.
func childEnv(env map[string]string, dir, tag string) []string {
	if !filepath.IsAbs(dir) {
		// Its PWD would depend on the working directory.
		return mergedEnv(withPWD(withTag(env, tag), dir))
	}
	base := os.Environ()
	tagged := tag != ""
	lastEnv.Lock()
	defer lastEnv.Unlock()
	if lastEnv.out == nil || dir != lastEnv.dir || tagged != lastEnv.tagged || !maps.Equal(env, lastEnv.env) || !slices.Equal(base, lastEnv.base) {
		out := mergedEnv(withPWD(withTag(env, tag), dir))
		lastEnv.tagAt = -1
		if tagged {
			lastEnv.tagAt = slices.Index(out, TaskEnv+"="+tag)
		}
		// Full: whoever appends to it gets a copy, never another start's.
		lastEnv.out = out[:len(out):len(out)]
		lastEnv.base, lastEnv.env, lastEnv.dir, lastEnv.tagged = base, maps.Clone(env), dir, tagged
	}
	if lastEnv.tagAt < 0 {
		return lastEnv.out
	}
	out := slices.Clone(lastEnv.out)
	out[lastEnv.tagAt] = TaskEnv + "=" + tag
	return out[:len(out):len(out)]
}

// mergedEnv returns os.Environ() with extra applied on top, deterministic
// order for reproducible records.
func mergedEnv(extra map[string]string) []string {
	env := os.Environ()
	if len(extra) == 0 {
		return env
	}
	idx := make(map[string]int, len(env))
	for i, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			idx[k] = i
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv := k + "=" + extra[k]
		if i, ok := idx[k]; ok {
			env[i] = kv
		} else {
			env = append(env, kv)
		}
	}
	return env
}

// resultOf converts a Wait error into a Result.
func resultOf(err error) Result {
	if err == nil {
		return Result{ExitCode: 0}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return statusResult(ws)
		}
		return Result{ExitCode: ee.ExitCode()}
	}
	return Result{ExitCode: -1, Err: err}
}

// statusResult is the result of a process that ended with ws.
func statusResult(ws syscall.WaitStatus) Result {
	if ws.Signaled() {
		return Result{ExitCode: -1, Signal: ws.Signal().String()}
	}
	return Result{ExitCode: ws.ExitStatus()}
}

// killGroup signals every process of the group led by pid. Errors are
// ignored: the group may already be gone.
func killGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// groupAlive reports whether any live process of the group is still there.
// Zombies do not count: an orphan reparented to an init that does not reap
// stays in the group as a zombie forever.
func groupAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(-pid, 0) != nil {
		return false
	}
	members, ok := GroupMembers(pid)
	return !ok || len(members) > 0
}

// GroupMembers lists the live (not zombie) processes of process group pgid,
// from /proc; ok is false where there is no /proc to read.
func GroupMembers(pgid int) (pids []int, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 3 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// ProcStart is a process's start time (clock ticks since boot, from
// /proc/<pid>/stat); with the pid it identifies the process across pid reuse.
func ProcStart(pid int) (uint64, bool) {
	st, ok := readStat(pid)
	return st.start, ok
}

// startSlack is how much later than StartTime's a process's /proc start
// time may be (clock ticks): the clock read just before the start, under
// load. Another process in the same pid within it would take the pids
// wrapping around in a second.
const startSlack = 100

// StartTime is what identifies p with its pid across pid reuse, for
// StopOrphan: its start time, as ProcStart reads it, or, for a process
// started here, the clock just before it started, which costs no /proc
// read on the way of every start.
func StartTime(p Process) (uint64, bool) {
	if s, ok := p.(interface{ startTicks() uint64 }); ok {
		if t := s.startTicks(); t > 0 {
			return t, true
		}
	}
	return ProcStart(p.Pid())
}

func (h *headless) startTicks() uint64 { return h.reaper.since }
func (t *Terminal) startTicks() uint64 { return t.reaper.since }

// StopOrphan stops the process group of a task left running by a vibeteam
// that died (kill -9, power loss of the terminal): only if pid is still the
// same process (its start time matches StartTime's). With a tag (the dead run's
// Spec.Tag), the processes carrying it and started no earlier than the
// leader go too, even when the leader is gone. It reports whether it stopped
// anything, and returns once all of it is gone (bounded after SIGKILL).
func StopOrphan(pid int, start uint64, grace time.Duration, tag ...string) bool {
	if pid <= 0 || start == 0 {
		return false
	}
	// The leader is not our child: signal its processes one by one, each
	// checked first, never the group id blindly.
	r := &reaper{since: start, exited: closedChan, swept: make(chan struct{}), kill: make(chan struct{})}
	if len(tag) > 0 {
		r.tag = tag[0]
	}
	if now, ok := ProcStart(pid); ok && now >= start && now-start <= startSlack {
		r.pgid = pid
	}
	if r.pgid == 0 && r.tag == "" {
		return false
	}
	if r.signal(0, lazySpared(), nil) == 0 {
		return false
	}
	r.end(grace)
	return true
}

// StopTagged stops every process carrying tag (GroupOnly runs leave theirs
// for this), TERM then KILL after grace. It reports whether any was found.
//
// Once this vibeteam started processes with tag, it looks only for those
// (and what they started): as a child subreaper, it knows without reading
// /proc when none can be left. Processes with the tag from a vibeteam that
// was killed are found by a call before it starts any (a resume's first).
func StopTagged(tag string, grace time.Duration) bool {
	if tag == "" || noneTagged(tag) {
		return false
	}
	r := &reaper{tag: tag, exited: closedChan, swept: make(chan struct{}), kill: make(chan struct{})}
	if r.signal(0, lazySpared(), nil) == 0 {
		return false
	}
	r.end(grace)
	return true
}

// sandboxed puts cmd, made for spec, inside spec.Sandbox: bwrap runs the
// command, with the environment the plan keeps (and what the caller set
// for this process, explicit). Its own session, without the terminal
// vibeteam may have: nothing inside can push keystrokes into it.
func sandboxed(cmd *exec.Cmd, spec Spec, explicit map[string]string) {
	if spec.Sandbox == nil || cmd.Err != nil {
		return
	}
	path, argv, env := spec.Sandbox.Wrap(cmd.Path, cmd.Args[1:], cmd.Env, func(name string) bool {
		_, ok := explicit[name]
		return ok || name == TaskEnv
	})
	cmd.Path, cmd.Args, cmd.Env = path, argv, env
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Setsid = false, true
	}
}
