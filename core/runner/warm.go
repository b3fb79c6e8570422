package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A sandboxed start is mostly bwrap's own work before the command runs
// and after it ends: its exec, namespaces, mounts, the pid namespace's
// init, and their teardown, where the machine makes every fork and page
// fault dear (about 12 ms on a quiet 2-core virtual machine, four times a
// short step). A Warmer keeps, for a run's starts of one shape (script
// steps, one after another in one worktree), a sandbox made once: a host,
// bwrap with everything set up and inside it this binary as the host's
// server (boxserver_linux.go). A start then only sends the server its
// command, environment and streams; the server starts it in a session of
// its own, and once it has exited ends everything else inside, as the end
// of a sandbox's pid namespace would, before it tells the exit status. The
// process has the sandbox a cold start gives (the same bwrap options,
// mounts, namespaces, capabilities, environment and streams); what the
// starts of one host share is what they share anyway (the work
// directory) and the private /tmp and /run, which the server leaves as a
// start left them.
type Warmer struct {
	mu     sync.Mutex
	idle   []*boxHost     // oldest first
	making map[string]int // hosts being made, by shape
	hosts  map[string]int // hosts alive, by shape (idle, busy, being made)
	// started counts the starts of each shape: hosts are made for a shape
	// started twice already, not for a run's one script step (a bead's
	// commit), whose host would only be made and thrown away.
	started map[string]int
	closed  bool
	closing chan struct{}  // closed by Close
	owned   sync.WaitGroup // the goroutines making hosts
}

// hostsPerShape bounds the hosts of one shape: a second serves a start
// while the first is busy (tasks of a stage side by side).
const hostsPerShape = 2

// maxIdle bounds the hosts kept waiting: a run's script steps use one or
// two shapes (a worktree, a step's own sandbox: block).
const maxIdle = 4

// BoxServerEnv, set to 1 in its environment, makes any binary that links
// this package a host's server (boxserver_linux.go).
const BoxServerEnv = "VIBETEAM_BOX_SERVER"

// boxMaxRequest bounds a request (a start's command line and environment):
// a bigger one is started cold. Under the socket's default buffer.
const boxMaxRequest = 192 << 10

// boxAnswerWait bounds the wait for the server's answer to a start (it
// answers at once: a fork and an exec) and for its first word.
const boxAnswerWait = 5 * time.Second

type boxRequest struct {
	Path string
	Argv []string
	Env  []string
	Dir  string
}

// encode is the request as the server reads it: its fields separated by
// NUL, which no argument or variable holds (exec takes C strings), with
// every other byte as it is (JSON would replace what is not UTF-8).
func (r boxRequest) encode() []byte {
	fields := append([]string{r.Path, r.Dir, strconv.Itoa(len(r.Argv))}, r.Argv...)
	return []byte(strings.Join(append(fields, r.Env...), "\x00"))
}

// decodeRequest reads what encode wrote.
func decodeRequest(b []byte) (boxRequest, error) {
	fields := strings.Split(string(b), "\x00")
	if len(fields) < 3 {
		return boxRequest{}, syscall.EBADMSG
	}
	n, err := strconv.Atoi(fields[2])
	if err != nil || n < 1 || 3+n > len(fields) {
		return boxRequest{}, syscall.EBADMSG
	}
	r := boxRequest{Path: fields[0], Dir: fields[1], Argv: fields[3 : 3+n], Env: fields[3+n:]}
	if len(r.Env) == 1 && r.Env[0] == "" {
		r.Env = nil
	}
	return r, nil
}

// boxAck is the host's second message of a start: it lets the server
// wait for the process, once the host has read its pid from the pidfd
// (which reads -1 once the process is reaped).
var boxAck = []byte{'a'}

type boxReply struct {
	Ready  bool    `json:"ready,omitempty"`
	Pid    int     `json:"pid,omitempty"` // started (its pid inside; a pidfd comes along)
	Err    string  `json:"err,omitempty"` // not started
	Status *uint32 `json:"status,omitempty"`
}

// boxHost is a kept sandbox and its server.
type boxHost struct {
	w      *Warmer
	key    string
	p      *piped
	conn   int           // our end of the server's socket
	idle   chan struct{} // open while it lives: its place in leaders
	pinned []fileID
	broken bool // a start went wrong: discarded, never reused
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

// unchanged reports whether every file the host's mounts show is the one
// it was made with: a bind shows the file it found, and one replaced since
// (git writes its config anew and renames it; a directory made again)
// would be the old one inside. Such a host is not used.
func (b *boxHost) unchanged() bool {
	for _, id := range b.pinned {
		if now := identify([]string{id.path}); now[0] != id {
			return false
		}
	}
	return true
}

// boxStarts keeps StopStrays from taking a host for a stray in the
// instant between its start and its registration as a leader (a host is a
// child in a session of its own, and is made while the run goes on).
var boxStarts sync.RWMutex

// NewWarmer makes a warmer; Close ends the sandboxes it keeps.
func NewWarmer() *Warmer {
	return &Warmer{making: map[string]int{}, hosts: map[string]int{}, started: map[string]int{}, closing: make(chan struct{})}
}

// start starts spec in a host of its shape, if one waits (nil: none does,
// or it could not, and the caller starts spec cold), and returns what has
// a host of this shape made once this start's process has exited.
func (w *Warmer) start(spec Spec) (*piped, *boxHost, func(exited <-chan struct{})) {
	if w == nil || spec.Sandbox == nil || !pidfdWatch() {
		return nil, nil, func(<-chan struct{}) {}
	}
	cmd, _ := command(spec, nil)
	sh, ok := shapeOf(cmd, spec)
	if !ok {
		return nil, nil, func(<-chan struct{}) {}
	}
	next := func(exited <-chan struct{}) { w.refill(sh, spec, exited) }
	b := w.take(sh.key)
	if b == nil {
		return nil, nil, next
	}
	// A start in a host needs no other: the host is back when it ends.
	counted := func(<-chan struct{}) { w.count(sh.key) }
	s, err := startPiped(spec, func(in *os.File, out, errOut int) (*exec.Cmd, int, int, error) {
		pid, pidfd, err := b.run(sh.req, in, out, errOut)
		return nil, pid, pidfd, err
	})
	if err != nil {
		// Not started: cold then, which fails (or not) as it always did.
		w.release(b)
		return nil, nil, next
	}
	return s, b, counted
}

// count counts a start of key.
func (w *Warmer) count(key string) {
	w.mu.Lock()
	w.started[key]++
	w.mu.Unlock()
}

// take is an idle host for key, if one is and is alive.
func (w *Warmer) take(key string) *boxHost {
	w.mu.Lock()
	i := slices.IndexFunc(w.idle, func(b *boxHost) bool { return b.key == key })
	if i < 0 {
		w.mu.Unlock()
		return nil
	}
	b := w.idle[i]
	w.idle = slices.Delete(w.idle, i, i+1)
	w.mu.Unlock()
	if b.ended() || !b.unchanged() {
		w.drop(b)
		return nil
	}
	return b
}

// release gives a host back after a start, or ends it (broken, closed,
// too many idle).
func (w *Warmer) release(b *boxHost) {
	w.mu.Lock()
	if b.broken || w.closed {
		w.mu.Unlock()
		w.drop(b)
		return
	}
	w.idle = append(w.idle, b)
	var evicted *boxHost
	if len(w.idle) > maxIdle {
		evicted, w.idle = w.idle[0], w.idle[1:]
	}
	w.mu.Unlock()
	if evicted != nil {
		w.drop(evicted)
	}
}

// drop ends a host and forgets it.
func (w *Warmer) drop(b *boxHost) {
	b.discard()
	w.mu.Lock()
	if w.hosts[b.key]--; w.hosts[b.key] <= 0 {
		delete(w.hosts, b.key)
	}
	w.mu.Unlock()
}

// refill counts a cold start of sh and, from sh's second start, has a
// host of sh made once this start's process has exited, on a goroutine the
// warmer waits for: the first host, or a second where starts come side by
// side (this one found none idle).
func (w *Warmer) refill(sh shape, spec Spec, after <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[sh.key]++; w.closed || w.started[sh.key] < 2 {
		return
	}
	w.owned.Add(1)
	go w.make(sh, spec, after)
}

// make makes a host of sh once after is closed, unless one waits then or
// is being made, or hostsPerShape are there: a start's own host is back
// by then, and a second is made only for starts side by side.
func (w *Warmer) make(sh shape, spec Spec, after <-chan struct{}) {
	defer w.owned.Done()
	// Made after the start before it exited: bwrap making a sandbox, its
	// forks and mounts (page tables copied and flushed on every processor
	// of a virtual machine), slowed that process down.
	select {
	case <-after:
	case <-w.closing:
		return // not made at a run's end only to be ended
	}
	w.mu.Lock()
	waiting := slices.ContainsFunc(w.idle, func(b *boxHost) bool { return b.key == sh.key })
	if w.closed || waiting || w.making[sh.key] > 0 || w.hosts[sh.key] >= hostsPerShape {
		w.mu.Unlock()
		return
	}
	w.making[sh.key]++
	w.hosts[sh.key]++
	w.mu.Unlock()
	b, err := makeHost(sh, spec)
	w.mu.Lock()
	if w.making[sh.key]--; w.making[sh.key] == 0 {
		delete(w.making, sh.key)
	}
	if err != nil {
		if w.hosts[sh.key]--; w.hosts[sh.key] <= 0 {
			delete(w.hosts, sh.key)
		}
		w.mu.Unlock()
		return
	}
	b.w = w
	w.mu.Unlock()
	w.release(b)
}

// Close ends every host kept, once those being made are made, and every
// busy one as its start ends. A start after it is cold.
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
		w.drop(b)
	}
}

// shape is what a sandboxed start's host is made of and what it is sent:
// key, everything the host fixes (bwrap, its options and mounts, the
// directory, the network namespace); box, the host's command line; req,
// the start's command, environment and directory inside.
type shape struct {
	key   string
	box   []string
	dir   string
	req   boxRequest
	binds []string // the sources of its bind mounts
}

// bindOptions are bwrap's options that bind a source path (the argument
// after them).
var bindOptions = []string{"--bind", "--ro-bind", "--bind-try", "--ro-bind-try", "--dev-bind", "--dev-bind-try"}

// hostProgram is this binary, which a host runs as its server.
var hostProgram = sync.OnceValues(os.Executable)

func shapeOf(cmd *exec.Cmd, spec Spec) (shape, bool) {
	dash := slices.Index(cmd.Args, "--")
	exe, err := hostProgram()
	if cmd.Err != nil || err != nil || dash < 0 || dash+1 >= len(cmd.Args) || !slices.Contains(cmd.Args[:dash], "--proc") {
		return shape{}, false // not wrapped, or no /proc inside for the server
	}
	path := cmd.Args[dash+1]
	if !filepath.IsAbs(path) {
		return shape{}, false // bwrap would look for it on PATH
	}
	dir := cmd.Dir
	if i := slices.Index(cmd.Args[:dash], "--chdir"); i >= 0 && i+1 < dash {
		dir = cmd.Args[i+1]
	}
	// The server is the sandbox's pid 1 (no bwrap init): the kernel
	// delivers no signal from inside to it but those it handles, and it
	// handles them all (it reaps what a start leaves, as an init does).
	box := append([]string{cmd.Args[0], "--as-pid-1"}, cmd.Args[1:dash]...)
	// The server is this very program (the file this process runs, even
	// where a new build has replaced it since), where it is: read-only, as
	// a program under the private /tmp named on a command line is.
	box = append(box, "--ro-bind", "/proc/"+strconv.Itoa(os.Getpid())+"/exe", exe, "--", exe)
	key := strings.Join(append([]string{cmd.Path, cmd.Dir, fmt.Sprint(spec.Sandbox.Netns)}, cmd.Args[:dash]...), "\x00")
	var binds []string
	for i := 1; i+1 < dash; i++ {
		if slices.Contains(bindOptions, cmd.Args[i]) {
			binds = append(binds, cmd.Args[i+1])
			i += 2 // the source and the destination
		}
	}
	req := boxRequest{Path: path, Argv: cmd.Args[dash+1:], Env: cmd.Env, Dir: dir}
	return shape{key: key, box: box, dir: cmd.Dir, req: req, binds: binds}, true
}
