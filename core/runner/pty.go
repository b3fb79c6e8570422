package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
)

// Defaults of the terminal runner.
const (
	DefaultCols        = 120
	DefaultRows        = 40
	DefaultQuiet       = 150 * time.Millisecond
	DefaultMaxInterval = 50 * time.Millisecond
	// screenBacklog bounds the bytes kept for the virtual terminal between
	// two state checks. When output outruns it (a firehose, not a TUI), the
	// screen is rebuilt from the newest bytes only; TUIs redraw far less
	// than this between checks.
	screenBacklog = 64 << 10
	chunkSize     = 64 << 10
	chunkQueue    = 32
	// A synchronized update (CSI ? 2026 h ... l) is held back from the
	// screen until it ends, at most this long and this big (kitty and
	// foot give up after 150 ms to 1 s).
	syncHold      = time.Second
	syncHoldBytes = 1 << 20
)

// StatePattern is one named pattern matched against the rendered screen.
type StatePattern struct {
	Name    string
	Pattern *regexp.Regexp
}

// Detection is a state check whose screen differs from the previous one.
// State is empty when no pattern matched.
type Detection struct {
	State  string
	Match  string
	Screen string
	Seq    uint64 // increases with every detection
	// The cursor when the screen was rendered (0-based; also when hidden).
	CursorRow int
	CursorCol int
	// Newlines counts the '\n' bytes the child had written when the screen
	// was rendered, over the Terminal's whole life (bytes the backlog
	// dropped included): the same question asked twice may show the same
	// screen, but not the same count once anything scrolled in between.
	Newlines uint64
}

// TerminalOptions configure the PTY runner.
type TerminalOptions struct {
	States      []StatePattern // nil: no state detection (usePTY headless)
	Quiet       time.Duration  // check after this much silence
	MaxInterval time.Duration  // and at most this often while output flows
	RawLog      io.Writer      // every byte the child wrote; may be nil
	OnOutput    func(Chunk)    // called from the consumer goroutine
	OnState     func(Detection)
}

// Terminal is a process running in a pseudo-terminal.
type Terminal struct {
	cmd   *exec.Cmd
	ptmx  *os.File
	slave string // the terminal's path, /dev/pts/N
	opts  TerminalOptions

	writeMu  sync.Mutex
	attached atomic.Bool                  // a real terminal answers queries while attached
	mirror   atomic.Pointer[mirrorWriter] // live copy of the output (attach)
	screenMu sync.Mutex                   // guards vt, backlog, lines, lastText, seq
	vt       vt10x.Terminal
	filter   screenFilter // what vt10x must not see (terminal queries)
	filtered []byte
	// held is a synchronized update (CSI ? 2026 h) still being drawn: kept
	// from the screen until it ends, or for at most syncHold since
	// syncSince, as a terminal does; syncGiven: this update was shown
	// unfinished (it took too long), the rest goes straight through.
	held      []byte
	syncSince time.Time
	syncGiven bool
	backlog   []byte
	dropped   bool
	lines     uint64 // newlines appended to the backlog, dropped ones included
	lastText  string
	seq       uint64

	lastOut atomic.Int64 // unix nanoseconds of the last output chunk
	closeMu sync.Mutex   // pty.Setsize reads the raw fd, which must not race with Close
	closed  bool
	chunks  chan []byte
	answers chan string // replies to terminal queries, written aside from the reader
	pool    sync.Pool
	reaper  *reaper
	exited  chan struct{}
	done    chan struct{}
	result  Result
}

type mirrorWriter struct{ w io.Writer }

// StartTerminal starts spec in a new PTY with its own session and process
// group. Exactly one goroutine reads the PTY; a second one turns the bytes
// into logs, events and, at a bounded rate, the rendered screen.
func StartTerminal(spec Spec, opts TerminalOptions) (*Terminal, error) {
	cols, rows := spec.Cols, spec.Rows
	if cols <= 0 {
		cols = DefaultCols
	}
	if rows <= 0 {
		rows = DefaultRows
	}
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.MaxInterval <= 0 {
		opts.MaxInterval = DefaultMaxInterval
	}
	env := map[string]string{"TERM": "xterm-256color", "COLUMNS": fmt.Sprint(cols), "LINES": fmt.Sprint(rows)}
	for k, v := range spec.Env {
		env[k] = v
	}
	if spec.Tag != "" {
		env[TaskEnv] = spec.Tag
	}
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = mergedEnv(withPWD(env, spec.Dir))
	sandboxed(cmd, spec, env)
	since := bootTicks()
	var ptmx *os.File
	err := spec.Sandbox.Start(func() (err error) {
		ptmx, err = pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start %s in a pty: %w", spec.Command, err)
	}
	t := &Terminal{
		cmd:     cmd,
		ptmx:    ptmx,
		opts:    opts,
		vt:      vt10x.New(vt10x.WithSize(cols, rows)),
		chunks:  make(chan []byte, chunkQueue),
		answers: make(chan string, 16),
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	if f, ok := cmd.Stdin.(*os.File); ok {
		t.slave = f.Name()
	}
	t.pool.New = func() any { b := make([]byte, chunkSize); return &b }
	t.reaper = newReaper(since, cmd.Process.Pid, spec.Tag, spec.Tag, t.exited)
	t.reaper.wrapped = spec.Sandbox != nil

	var wg sync.WaitGroup
	wg.Add(3)
	go t.read(&wg)
	go t.consume(&wg)
	go t.answer(&wg)
	go func() {
		t.result = resultOf(cmd.Wait())
		close(t.exited)
		// Whatever the agent left behind goes with it (a Stop's sweep, if
		// one runs, is waited for instead).
		t.reaper.end(exitGrace)
		// The reader ends at EIO once every holder of the slave is gone; if
		// a process we could not find still holds it, stop waiting.
		drained := make(chan struct{})
		go func() { wg.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(drainWait):
			t.closePTY()
			t.wakeReader()
			<-drained
		}
		t.closePTY()
		close(t.done)
	}()
	return t, nil
}

// read is the PTY's only reader: it hands chunks to the consumer and answers
// terminal queries, nothing more, so it runs at the speed of the PTY.
func (t *Terminal) read(wg *sync.WaitGroup) {
	defer wg.Done()
	defer close(t.chunks)
	for {
		bp := t.pool.Get().(*[]byte)
		buf := *bp
		n, err := t.ptmx.Read(buf)
		if n > 0 {
			*bp = buf[:n]
			t.chunks <- *bp
		} else {
			t.pool.Put(bp)
		}
		if err != nil {
			return
		}
	}
}

// answers to the terminal queries the Stripper finds.
var queryAnswers = map[Query]string{
	QueryStatus:      "\x1b[0n",
	QueryPrimaryDA:   "\x1b[?62;22c",
	QuerySecondaryDA: "\x1b[>1;10;0c",
	QueryForeground:  "\x1b]10;rgb:ffff/ffff/ffff\x1b\\",
	QueryBackground:  "\x1b]11;rgb:0000/0000/0000\x1b\\",
	// QueryCursor is answered from the screen.
}

// onQuery answers a query some TUIs (codex) wait for, unless a real
// terminal is attached and answers itself.
func (t *Terminal) onQuery(q Query) {
	if t.attached.Load() {
		return
	}
	t.reply(queryAnswers[q])
}

// reply hands an answer to the answer writer. Neither the reader nor the
// consumer may wait on a write: if the child is not reading its input, a
// blocked write would stop the output path, the child would block on
// output, and neither would move.
func (t *Terminal) reply(ans string) {
	select {
	case t.answers <- ans:
	default: // a child flooding queries gets some unanswered
	}
}

// answer writes the replies to terminal queries.
func (t *Terminal) answer(wg *sync.WaitGroup) {
	defer wg.Done()
	for ans := range t.answers {
		if ans == "" { // a cursor position report comes from the screen
			ans = t.cursorReport()
		}
		_ = t.write([]byte(ans))
	}
}

// cursorReport answers a cursor position query. The screen may lag behind
// the stream by a few milliseconds; TUIs use the answer to size their
// viewport, where an approximate row is fine.
func (t *Terminal) cursorReport() string {
	t.screenMu.Lock()
	defer t.screenMu.Unlock()
	c := t.vt.Cursor()
	return fmt.Sprintf("\x1b[%d;%dR", c.Y+1, c.X+1)
}

// consume writes logs, emits output, keeps the screen backlog and runs the
// state checks: after a quiet period, and at a bounded rate while output
// keeps flowing (spinners never go quiet).
func (t *Terminal) consume(wg *sync.WaitGroup) {
	defer wg.Done()
	defer close(t.answers) // the consumer is the only one who answers
	var (
		strip     = Stripper{OnQuery: t.onQuery}
		clean     []byte
		lastCheck time.Time
		quiet     = time.NewTimer(time.Hour)
		pending   bool
		rawLog    *bufio.Writer
	)
	quiet.Stop()
	defer quiet.Stop()
	if t.opts.RawLog != nil {
		// Buffered: a write per PTY read (often 4 KiB) costs more than
		// everything else on this path. Flushed at every quiet period.
		rawLog = bufio.NewWriterSize(t.opts.RawLog, 64<<10)
		defer rawLog.Flush()
	}
	// The quiet timer is armed once and, when it fires, re-armed for what
	// is left of the quiet period since the last output: resetting it for
	// every chunk of a stream costs more than the chunk's other work.
	armed := false
	for {
		select {
		case chunk, ok := <-t.chunks:
			if !ok {
				return
			}
			now := time.Now()
			t.lastOut.Store(now.UnixNano())
			if rawLog != nil {
				_, _ = rawLog.Write(chunk)
			}
			if m := t.mirror.Load(); m != nil {
				_, _ = m.w.Write(chunk)
			}
			clean = strip.Strip(clean[:0], chunk)
			if t.opts.OnOutput != nil {
				t.opts.OnOutput(Chunk{Stream: "pty", Raw: chunk, Clean: clean})
			}
			t.appendBacklog(chunk)
			b := chunk[:cap(chunk)]
			t.pool.Put(&b)
			pending = true
			if t.opts.OnState != nil && now.Sub(lastCheck) >= t.opts.MaxInterval {
				lastCheck = now
				pending = false
				t.check()
			}
			if !armed {
				quiet.Reset(t.opts.Quiet)
				armed = true
			}
		case <-quiet.C:
			armed = false
			if left := t.opts.Quiet - time.Since(time.Unix(0, t.lastOut.Load())); left > 0 {
				quiet.Reset(left) // output came since it was armed
				armed = true
				continue
			}
			if rawLog != nil {
				_ = rawLog.Flush()
			}
			if pending && t.opts.OnState != nil {
				lastCheck = time.Now()
				pending = false
				t.check()
				if t.holding() {
					// A synchronized update left open: looked at again
					// once it may be shown unfinished.
					pending = true
					quiet.Reset(syncHold)
					armed = true
				}
			}
		}
	}
}

func (t *Terminal) appendBacklog(chunk []byte) {
	n := uint64(bytes.Count(chunk, []byte{'\n'}))
	t.screenMu.Lock()
	defer t.screenMu.Unlock()
	t.lines += n
	if len(chunk) >= screenBacklog {
		t.backlog = append(t.backlog[:0], chunk[len(chunk)-screenBacklog:]...)
		t.dropped = true
		return
	}
	if len(t.backlog)+len(chunk) > screenBacklog {
		// Keep the newest half (at least): shifting the whole backlog for
		// every chunk of a firehose would copy it over and over.
		drop := max(len(t.backlog)+len(chunk)-screenBacklog, len(t.backlog)-screenBacklog/2)
		t.backlog = append(t.backlog[:0], t.backlog[drop:]...)
		t.dropped = true
	}
	t.backlog = append(t.backlog, chunk...)
}

// holding reports whether a synchronized update is held from the screen.
func (t *Terminal) holding() bool {
	t.screenMu.Lock()
	defer t.screenMu.Unlock()
	return len(t.held) > 0
}

// renderLocked brings the virtual terminal up to date and returns it.
func (t *Terminal) renderLocked() Detection {
	if t.dropped {
		cols, rows := t.vt.Size()
		t.vt = vt10x.New(vt10x.WithSize(cols, rows))
		t.dropped = false
		t.filter.reset()
		t.held = t.held[:0]
	}
	if len(t.backlog) > 0 || len(t.held) > 0 {
		t.filtered = append(t.filtered[:0], t.held...)
		t.held = t.held[:0]
		t.filter.syncMark = 0 // held bytes, if any, begin the open update
		starts := t.filter.syncStarts
		t.filtered = t.filter.apply(t.filtered, t.backlog)
		t.backlog = t.backlog[:0]
		show := t.filtered
		if t.filter.syncStarts != starts {
			// A new update began (the one before, if any, ended).
			t.syncSince, t.syncGiven = time.Now(), false
		}
		if t.filter.inSync && !t.syncGiven {
			if time.Since(t.syncSince) < syncHold && len(t.filtered)-t.filter.syncMark < syncHoldBytes {
				show = t.filtered[:t.filter.syncMark]
				t.held = append(t.held, t.filtered[t.filter.syncMark:]...)
			} else {
				t.syncGiven = true // too long: shown as it is, like a terminal
			}
		}
		_, _ = t.vt.Write(show)
	}
	text, cur := screenText(t.vt)
	return Detection{Screen: text, CursorRow: cur.Y, CursorCol: cur.X, Newlines: t.lines}
}

// RenderScreen plays raw terminal output (a task's .raw.log) into a virtual
// terminal of the given size and returns the final screen's text.
func RenderScreen(raw []byte, cols, rows int) string {
	vt := vt10x.New(vt10x.WithSize(cols, rows))
	var f screenFilter
	_, _ = vt.Write(f.apply(nil, raw))
	text, _ := screenText(vt)
	return text
}

// screenText is the screen's text, lines right-trimmed except on the
// cursor's row, which keeps what is left of the cursor: a prompt "> "
// waiting for input shows as "> ", so patterns can tell it from a ">" that
// ends a line of output. The cursor counts even when hidden: TUIs hide it
// and draw their own.
func screenText(vt vt10x.Terminal) (string, vt10x.Cursor) {
	vt.Lock()
	defer vt.Unlock()
	cols, rows := vt.Size()
	cur := vt.Cursor()
	var b strings.Builder
	line := make([]rune, 0, cols)
	for y := 0; y < rows; y++ {
		line = line[:0]
		for x := 0; x < cols; x++ {
			r := vt.Cell(x, y).Char
			if r == 0 {
				r = ' '
			}
			line = append(line, r)
		}
		keep := len(line)
		for keep > 0 && line[keep-1] == ' ' {
			keep--
		}
		if y == cur.Y && keep < cur.X {
			keep = min(cur.X, len(line))
		}
		b.WriteString(string(line[:keep]))
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n") + "\n", cur
}

// check renders the screen and, when it changed since the last check,
// reports the first matching state.
func (t *Terminal) check() {
	t.screenMu.Lock()
	d := t.renderLocked()
	if d.Screen == t.lastText {
		t.screenMu.Unlock()
		return
	}
	t.lastText = d.Screen
	t.seq++
	d.Seq = t.seq
	t.screenMu.Unlock()
	t.match(&d)
	t.opts.OnState(d)
}

// Detect renders the screen now and matches the states against it, whether
// or not it changed.
func (t *Terminal) Detect() (Detection, bool) {
	t.screenMu.Lock()
	d := t.renderLocked()
	t.lastText = d.Screen
	t.seq++
	d.Seq = t.seq
	t.screenMu.Unlock()
	t.match(&d)
	return d, len(t.opts.States) > 0
}

// match sets the first state whose pattern matches d's screen.
func (t *Terminal) match(d *Detection) {
	for _, s := range t.opts.States {
		if loc := s.Pattern.FindStringIndex(d.Screen); loc != nil {
			d.State, d.Match = s.Name, d.Screen[loc[0]:loc[1]]
			return
		}
	}
}

// Screen is the rendered screen now.
func (t *Terminal) Screen() string {
	t.screenMu.Lock()
	defer t.screenMu.Unlock()
	return t.renderLocked().Screen
}

// Pid is the child's pid (also its process group and session id).
func (t *Terminal) Pid() int { return t.cmd.Process.Pid }

func (t *Terminal) write(p []byte) error {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	_, err := t.ptmx.Write(p)
	return err
}

// Send types text into the terminal.
func (t *Terminal) Send(text string) error { return t.write([]byte(text)) }

// CloseInput is a no-op: a terminal has no end of input short of stopping.
func (t *Terminal) CloseInput() error { return nil }

// Done is closed once the process has exited and its output is drained.
func (t *Terminal) Done() <-chan struct{} { return t.done }

// Exited is closed as soon as the process has exited.
func (t *Terminal) Exited() <-chan struct{} { return t.exited }

// Result is valid after Done.
func (t *Terminal) Result() Result { return t.result }

// Stop ends the process group and the tagged processes: SIGTERM, grace,
// SIGKILL. It returns once all of them are gone (bounded after SIGKILL) and
// the output is drained.
func (t *Terminal) Stop(grace time.Duration) {
	t.reaper.end(grace)
	<-t.done
}

// wakeReader ends a read of the master that waits on a terminal still held
// by a process we could not find. Closing the master does not interrupt a
// read already in the kernel (creack/pty leaves the fd blocking); a byte
// written on the terminal does, and the next read finds the file closed. A
// NUL: nothing on the screen or in the clean text.
func (t *Terminal) wakeReader() {
	if t.slave == "" {
		return
	}
	f, err := os.OpenFile(t.slave, os.O_WRONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	_, _ = f.Write([]byte{0})
	_ = f.Close()
}

func (t *Terminal) closePTY() {
	t.closeMu.Lock()
	defer t.closeMu.Unlock()
	if !t.closed {
		t.closed = true
		_ = t.ptmx.Close()
	}
}

// LastOutput is when the child last wrote anything (zero before it has):
// the screen cannot have changed since.
func (t *Terminal) LastOutput() time.Time {
	if n := t.lastOut.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Size is the PTY's window size.
func (t *Terminal) Size() (cols, rows int) {
	t.screenMu.Lock()
	defer t.screenMu.Unlock()
	return t.vt.Size()
}

// Kill SIGKILLs the process group and the tagged processes now.
func (t *Terminal) Kill() { t.reaper.killNow() }

// Resize changes the PTY's window size (the child gets SIGWINCH).
func (t *Terminal) Resize(cols, rows int) error {
	t.screenMu.Lock()
	t.vt.Resize(cols, rows)
	t.screenMu.Unlock()
	t.closeMu.Lock()
	defer t.closeMu.Unlock()
	if t.closed {
		return os.ErrClosed
	}
	return pty.Setsize(t.ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
}

// Mirror copies live output to w (nil stops it). While mirrored to a real
// terminal, that terminal answers the child's queries.
func (t *Terminal) Mirror(w io.Writer) {
	if w == nil {
		t.mirror.Store(nil)
		t.attached.Store(false)
		return
	}
	t.attached.Store(true)
	t.mirror.Store(&mirrorWriter{w: w})
}
