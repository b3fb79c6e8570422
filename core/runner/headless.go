package runner

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// headless runs a process on pipes. Its process group is its own, so a stop
// reaches the agent's children too.
type headless struct {
	cmd      *exec.Cmd // started only where it is waited for (watchEach)
	pid      int
	stdin    io.WriteCloser
	inMu     sync.Mutex
	inClosed bool

	// host, when set, is the kept sandbox the process runs in: the leader
	// is its server's child, whose status the server tells.
	host *boxHost

	reaper *reaper
	exited chan struct{} // leader reaped
	done   chan struct{} // leader reaped, its processes gone, output drained
	result Result

	// here is the watching left to the caller (Spec.WatchHere) until the
	// caller, or anything that waits for the process, takes it.
	hereMu sync.Mutex
	here   *watch
}

// StartHeadless starts spec on pipes. onOutput is called from the
// goroutine(s) that read the output, one chunk at a time, and must not
// retain Raw.
func StartHeadless(spec Spec, onOutput func(Chunk)) (Process, error) {
	s, host, warmNext := spec.Warm.start(spec) // a sandbox kept for starts of this shape, if one waits
	if s == nil {
		var err error
		if s, err = startPiped(spec, func(in *os.File, out, errOut int) (*exec.Cmd, int, int, error) {
			return startSpec(spec, in, out, errOut)
		}); err != nil {
			return nil, err
		}
	}
	h := &headless{cmd: s.cmd, pid: s.pid, stdin: s.stdin, host: host, exited: make(chan struct{}), done: make(chan struct{})}
	h.reaper = newReaper(s.since, h.pid, reaperTag(spec), spec.Tag, h.exited)
	// In a kept sandbox the leader is the command itself, not bwrap.
	h.reaper.wrapped = spec.Sandbox != nil && host == nil
	warmNext(h.exited)
	if s.pidfd >= 0 {
		w := h.newWatch(s.pidfd, s.ours, s.streams, onOutput)
		if spec.WatchHere {
			h.here = w
		} else {
			go w.run()
		}
	} else {
		h.watchEach(s.ours, s.streams, onOutput)
	}
	return h, nil
}

// piped is a process started on pipes: ours are the read ends of its
// output streams, stdin the write end of its input (nil: /dev/null).
type piped struct {
	cmd        *exec.Cmd // waited for by watchEach where pidfd is -1
	pid, pidfd int
	since      uint64 // bootTicks just before the start
	stdin      io.WriteCloser
	ours       []int
	streams    []string
}

// startPiped makes the pipes spec asks for and starts the process with
// them (start: its stdin, stdout and stderr).
func startPiped(spec Spec, start func(in *os.File, out, errOut int) (*exec.Cmd, int, int, error)) (*piped, error) {
	// Our own pipes rather than cmd.StdinPipe/StdoutPipe: Wait must not
	// wait for grandchildren that keep the pipe open (we kill the group and
	// then drain), and the child's ends need not be polled.
	var stdin io.WriteCloser
	var childIn *os.File // closed here once the child has it; not /dev/null
	in, err := devNull()
	if err != nil {
		return nil, err
	}
	if !spec.NoInput {
		if stdin, childIn, err = inputPipe(); err != nil {
			return nil, err
		}
		in = childIn
	}
	// Our ends of the output pipes, as raw non-blocking fds: the Linux
	// watcher polls them itself; elsewhere they go to the poller.
	streams := []string{"stdout", "stderr"}
	if spec.MergeOutput {
		streams = []string{"output"}
	}
	var ours, theirs []int
	failed := func(err error) (*piped, error) {
		for _, fd := range append(ours, theirs...) {
			syscall.Close(fd)
		}
		if stdin != nil {
			stdin.Close()
		}
		if childIn != nil {
			childIn.Close()
		}
		return nil, err
	}
	for range streams {
		r, w, err := outputPipe()
		if err != nil {
			return failed(err)
		}
		ours, theirs = append(ours, r), append(theirs, w)
	}
	out, errOut := theirs[0], theirs[len(theirs)-1]
	since := bootTicks()
	cmd, pid, pidfd, err := start(in, out, errOut)
	for _, fd := range theirs {
		syscall.Close(fd) // the child has them
	}
	theirs = nil
	if childIn != nil {
		childIn.Close()
	}
	if err != nil {
		childIn = nil
		return failed(fmt.Errorf("start %s: %w", spec.Command, err))
	}
	return &piped{cmd: cmd, pid: pid, pidfd: pidfd, since: since, stdin: stdin, ours: ours, streams: streams}, nil
}

// startSpec starts spec's command, in its sandbox's network namespace
// where it has one, with in, out and errOut as its standard streams.
func startSpec(spec Spec, in *os.File, out, errOut int) (cmd *exec.Cmd, pid, pidfd int, err error) {
	cmd, cached := command(spec, in)
	err = spec.Sandbox.Start(func() (err error) {
		pid, pidfd, err = spawn(cmd, out, errOut)
		if err != nil && cached && staleCommand(err) {
			// The command found before is gone or changed: look for it again.
			forget(spec.Command)
			cmd, _ = command(spec, in)
			pid, pidfd, err = spawn(cmd, out, errOut)
		}
		return err
	})
	return cmd, pid, pidfd, err
}

// watchEach waits for the leader and reads each stream, each on a
// goroutine of its own (where there is no pidfd to poll with the output).
func (h *headless) watchEach(fds []int, streams []string, onOutput func(Chunk)) {
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "|"+streams[i]) // in the poller
	}
	// drained is closed by the last reader to reach EOF.
	left := int32(len(files))
	drained := make(chan struct{})
	readerDone := func() {
		if atomic.AddInt32(&left, -1) == 0 {
			close(drained)
		}
	}
	for i, f := range files {
		go h.read(streams[i], f, onOutput, readerDone)
	}
	go func() {
		h.result = resultOf(h.cmd.Wait())
		close(h.exited)
		// Whatever the agent left behind goes with it, so nothing outlives
		// the task; and before the drain, because what it left may hold
		// the pipes open.
		h.reaper.end(exitGrace)
		select {
		case <-drained:
		default:
			giveUp := time.NewTimer(drainWait)
			select {
			case <-drained:
			case <-giveUp.C:
				// Held by a process we could not find: give up the rest.
				for _, f := range files {
					f.Close()
				}
				<-drained
			}
			giveUp.Stop()
		}
		h.closeInput()
		close(h.done)
	}()
}

// readBufs are the headless readers' buffers: a script step that prints a
// line would otherwise allocate 32 KiB per stream, which is most of what a
// run of short steps allocates, and its garbage collections.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

func (h *headless) read(stream string, r *os.File, onOutput func(Chunk), done func()) {
	defer done()
	defer r.Close()
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp) // onOutput keeps no Raw
	buf := *bp
	var (
		strip Stripper
		clean []byte
	)
	for {
		n, err := r.Read(buf)
		if n > 0 && onOutput != nil {
			clean = strip.Strip(clean[:0], buf[:n])
			onOutput(Chunk{Stream: stream, Raw: buf[:n], Clean: clean})
		}
		if err != nil {
			return
		}
	}
}

func (h *headless) Pid() int { return h.pid }

func (h *headless) Send(text string) error {
	h.inMu.Lock()
	defer h.inMu.Unlock()
	if h.inClosed || h.stdin == nil {
		return fmt.Errorf("input of pid %d is closed", h.Pid())
	}
	_, err := io.WriteString(h.stdin, text)
	return err
}

func (h *headless) CloseInput() error { return h.closeInput() }

func (h *headless) closeInput() error {
	h.inMu.Lock()
	defer h.inMu.Unlock()
	if h.inClosed {
		return nil
	}
	h.inClosed = true
	if h.stdin == nil {
		return nil
	}
	return h.stdin.Close()
}

func (h *headless) Done() <-chan struct{} {
	h.watched()
	return h.done
}

func (h *headless) Result() Result { return h.result }

func (h *headless) Kill() { h.reaper.killNow() }

func (h *headless) Stop(grace time.Duration) {
	h.watched()
	h.reaper.end(grace)
	<-h.done
}

// takeHere takes the watching left to the caller, if nobody has.
func (h *headless) takeHere() *watch {
	h.hereMu.Lock()
	defer h.hereMu.Unlock()
	w := h.here
	h.here = nil
	return w
}

// watched has a goroutine watch a process whose caller was to watch it
// and has not begun: whatever waits for the process needs it watched.
func (h *headless) watched() {
	if w := h.takeHere(); w != nil {
		go w.run()
	}
}

func (h *headless) WatchHere(wake *Wake, deadline time.Time) bool {
	fd := wake.pollable()
	if fd < 0 {
		h.watched() // nothing could stop the watch: not here, then
		return false
	}
	w := h.takeHere()
	if w == nil {
		return false
	}
	if w.loop(fd, deadline) {
		w.finish()
		return true
	}
	go w.run()
	return false
}
