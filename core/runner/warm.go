package runner

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A sandboxed start is mostly bwrap's own work before the command runs:
// its exec, namespaces, mounts, the pid namespace's init, where the
// machine makes every fork and page fault dear (about 15 ms on a quiet
// 2-core virtual machine, five times a short step). A Warmer makes that
// sandbox ahead, while the previous start of the same shape runs: bwrap
// with everything set up, and inside a shell waiting on its fd 3 for what
// to run. The start then only writes the command and its environment
// there, and the shell execs it: the process is the one a cold start
// makes (the same bwrap, mounts, pid namespace, process group and
// streams), begun earlier.
type Warmer struct {
	mu     sync.Mutex
	idle   []*warmBox     // oldest first
	making map[string]int // boxes being made, by shape
	// started counts the starts of each shape: boxes are made for a shape
	// started twice already, not for a run's one script step (a bead's
	// commit), whose boxes would only be made and thrown away.
	started map[string]int
	closed  bool
	closing chan struct{}  // closed by Close
	owned   sync.WaitGroup // the goroutines making boxes
}

// ahead is how many boxes of a shape are kept made or being made: steps
// that follow each other at once start faster than one box is made, and
// two are made side by side on two processors.
const ahead = 2

// maxIdle bounds the sandboxes kept waiting: a run's script steps use
// one or two shapes (a worktree, a step's own sandbox: block).
const maxIdle = 2 * ahead

// warmBox is a sandbox made ahead, not yet given its command.
type warmBox struct {
	key    string
	p      *piped
	script *os.File      // the write end of the shell's fd 3
	idle   chan struct{} // open while it waits: its place in leaders
	// pinned are the files its bind mounts show, as they were when it was
	// made: a bind shows the file it found, and one replaced since (git
	// writes its config anew and renames it; a directory made again)
	// would be the old one inside. Such a box is not taken.
	pinned []fileID
}

// fileID is a file's identity: what a bind mount holds on to.
type fileID struct {
	path     string
	dev, ino uint64
}

// identify is the identity of each of paths (zero for one that is not
// there, as a bind of it found nothing).
func identify(paths []string) []fileID {
	ids := make([]fileID, len(paths))
	for i, path := range paths {
		ids[i].path = path
		var st syscall.Stat_t
		if syscall.Stat(path, &st) == nil {
			ids[i].dev, ids[i].ino = uint64(st.Dev), st.Ino
		}
	}
	return ids
}

// unchanged reports whether every file the box's mounts show is the one
// it was made with.
func (b *warmBox) unchanged() bool {
	for _, id := range b.pinned {
		if now := identify([]string{id.path}); now[0] != id {
			return false
		}
	}
	return true
}

// boxStarts keeps StopStrays from taking a box for a stray in the instant
// between its start and its registration as a leader (a box is a child in
// a session of its own, and is made while the run goes on).
var boxStarts sync.RWMutex

// NewWarmer makes a warmer; Close ends the sandboxes it keeps.
func NewWarmer() *Warmer {
	return &Warmer{making: map[string]int{}, started: map[string]int{}, closing: make(chan struct{})}
}

// start starts spec in a box made ahead for its shape, if one waits (nil:
// none does, and the caller starts spec cold), and returns what has the
// next box of this shape made once this start's process has exited.
func (w *Warmer) start(spec Spec) (*piped, func(exited <-chan struct{})) {
	if w == nil || spec.Sandbox == nil {
		return nil, func(<-chan struct{}) {}
	}
	cmd, _ := command(spec, nil)
	sh, ok := shapeOf(cmd, spec)
	if !ok {
		return nil, func(<-chan struct{}) {}
	}
	next := func(exited <-chan struct{}) { w.refill(sh, spec, exited) }
	b := w.take(sh.key)
	if b == nil {
		return nil, next
	}
	if _, err := b.script.WriteString(sh.script); err != nil {
		b.discard() // it ended while it waited
		return nil, next
	}
	b.script.Close()
	return b.p, next
}

// take is the box waiting for key, if one does and is alive.
func (w *Warmer) take(key string) *warmBox {
	w.mu.Lock()
	i := slices.IndexFunc(w.idle, func(b *warmBox) bool { return b.key == key })
	if i < 0 {
		w.mu.Unlock()
		return nil
	}
	b := w.idle[i]
	w.idle = slices.Delete(w.idle, i, i+1)
	w.mu.Unlock()
	if b.ended() || !b.unchanged() {
		b.discard()
		return nil
	}
	return b
}

// refill counts a start of sh and, from its second, has boxes of sh made,
// each on a goroutine the warmer waits for, until ahead of them wait or
// are being made.
func (w *Warmer) refill(sh shape, spec Spec, after <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[sh.key]++; w.closed || w.started[sh.key] < 2 {
		return
	}
	waiting := 0
	for _, b := range w.idle {
		if b.key == sh.key {
			waiting++
		}
	}
	for ; waiting+w.making[sh.key] < ahead; w.making[sh.key]++ {
		w.owned.Add(1)
		go w.make(sh, spec, after)
	}
}

// make makes one box of sh and keeps it, the oldest box going if too many
// wait.
func (w *Warmer) make(sh shape, spec Spec, after <-chan struct{}) {
	defer w.owned.Done()
	// Made after the start before it exited: bwrap making a box, its
	// forks and mounts (page tables copied and flushed on every processor
	// of a virtual machine), slowed that process down more than the box
	// saved.
	select {
	case <-after:
	case <-w.closing:
	}
	b, err := makeBox(sh, spec)
	w.mu.Lock()
	if w.making[sh.key]--; w.making[sh.key] == 0 {
		delete(w.making, sh.key)
	}
	if err != nil || w.closed {
		w.mu.Unlock()
		if b != nil {
			b.discard()
		}
		return
	}
	w.idle = append(w.idle, b)
	var evicted *warmBox
	if len(w.idle) > maxIdle {
		evicted, w.idle = w.idle[0], w.idle[1:]
	}
	w.mu.Unlock()
	if evicted != nil {
		evicted.discard()
	}
}

// Close ends every box kept, once those being made are made. A start
// after it is cold.
func (w *Warmer) Close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.closing)
	}
	w.mu.Unlock()
	w.owned.Wait()
	w.mu.Lock()
	idle := w.idle
	w.idle = nil
	w.mu.Unlock()
	for _, b := range idle {
		b.discard()
	}
}

// shape is what a sandboxed start's box is made of and what it is sent:
// key, everything the box fixes (bwrap, its options and mounts, the
// directory, the streams, the network namespace); box, its command line;
// script, the environment and command line the shell inside execs.
type shape struct {
	key    string
	box    []string
	dir    string
	script string
	binds  []string // the sources of its bind mounts
}

// bindOptions are bwrap's options that bind a source path (the argument
// after them).
var bindOptions = []string{"--bind", "--ro-bind", "--bind-try", "--ro-bind-try", "--dev-bind", "--dev-bind-try"}

func shapeOf(cmd *exec.Cmd, spec Spec) (shape, bool) {
	dash := slices.Index(cmd.Args, "--")
	if cmd.Err != nil || dash < 0 || !slices.Contains(cmd.Args[:dash], "--proc") {
		return shape{}, false // not wrapped, or no /dev/fd inside to read from
	}
	var script strings.Builder
	for _, kv := range cmd.Env {
		name, value, _ := strings.Cut(kv, "=")
		if !shellName(name) {
			return shape{}, false // the shell could not pass it on
		}
		script.WriteString("export " + name + "=" + shellQuote(value) + "\n")
	}
	script.WriteString("exec")
	for _, a := range cmd.Args[dash+1:] {
		script.WriteString(" " + shellQuote(a))
	}
	script.WriteString(" 3<&-\n")
	box := append(slices.Clone(cmd.Args[:dash]), "--", "/bin/sh", "-c", ". /dev/fd/3")
	key := strings.Join(append([]string{cmd.Path, cmd.Dir, fmt.Sprint(spec.NoInput, spec.MergeOutput, spec.Sandbox.Netns)}, box...), "\x00")
	var binds []string
	for i := 1; i+1 < dash; i++ {
		if slices.Contains(bindOptions, cmd.Args[i]) {
			binds = append(binds, cmd.Args[i+1])
			i += 2 // the source and the destination
		}
	}
	return shape{key: key, box: box, dir: cmd.Dir, script: script.String(), binds: binds}, true
}

// shellQuote quotes s for sh in single quotes, which keep every byte as it
// is, newlines and control characters included (mvdan.cc/sh's Quote
// refuses those in POSIX mode, and a script step's command is often
// several lines).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellName reports whether name can be exported by sh.
func shellName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range name {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// makeBox starts the box of sh: bwrap as spec's start would run it, with
// spec's streams, the shell inside waiting on its fd 3. Its environment is
// empty: what the command gets, the script exports.
func makeBox(sh shape, spec Spec) (*warmBox, error) {
	p, err := cloexecPipe()
	if err != nil {
		return nil, err
	}
	r, script := os.NewFile(uintptr(p[0]), "|box"), os.NewFile(uintptr(p[1]), "|script")
	defer r.Close()
	idle := make(chan struct{})
	pinned := identify(sh.binds) // before bwrap binds them: a file replaced in between is seen changed
	started, err := startPiped(spec, func(in *os.File, out, errOut int) (*exec.Cmd, int, int, error) {
		cmd := &exec.Cmd{Path: sh.box[0], Args: sh.box, Dir: sh.dir, Env: []string{}, Stdin: in, ExtraFiles: []*os.File{r},
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
		script.Close()
		return nil, err
	}
	return &warmBox{key: sh.key, p: started, script: script, idle: idle, pinned: pinned}, nil
}

// ended reports whether the box's bwrap exited while it waited.
func (b *warmBox) ended() bool {
	if b.p.pidfd < 0 {
		return false // the script's write finds out
	}
	fds := []unix.PollFd{{Fd: int32(b.p.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// discard ends a box never given a command: its group killed, its bwrap
// reaped (a child never reaped till now, so its pid is still its own), the
// pid namespace's init that comes back to us after it too.
func (b *warmBox) discard() {
	b.script.Close()
	_ = syscall.Kill(-b.p.pid, syscall.SIGKILL)
	if b.p.pidfd >= 0 {
		reap(b.p.pid, true)
		syscall.Close(b.p.pidfd)
	} else {
		_ = b.p.cmd.Wait()
	}
	close(b.idle)
	(&reaper{pgid: b.p.pid}).settleSandbox()
	for _, fd := range b.p.ours {
		syscall.Close(fd)
	}
	if b.p.stdin != nil {
		b.p.stdin.Close()
	}
}
