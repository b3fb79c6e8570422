package state

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxTailLineBytes caps one line of the in-memory tail. The tail ends up in
// the session file, and a tool that prints megabytes without a newline must
// not bloat every checkpoint.
const maxTailLineBytes = 2048

// logFlushEvery bounds how far the file lags behind the output.
const logFlushEvery = 250 * time.Millisecond

// TaskLog is the full output file of one task plus a bounded tail of clean
// lines for the session file. It is safe for concurrent use.
type TaskLog struct {
	mu        sync.Mutex
	f         *os.File
	w         *bufio.Writer // a PTY delivers ~4 KiB reads; a syscall each is the cost
	lastFlush time.Time
	path      string
	// The file is created aside (opened, below), not on the way of the
	// task's start: creating a file can cost more than a short task's whole
	// run. What the task writes meanwhile waits in early.
	opened  chan struct{} // nil while a short log has no file (yet)
	openErr error
	early   []byte
	closed  bool
	// A short log (OpenShortTaskLog) makes its file only when the output
	// is more than the tail holds whole, or the task runs followAfter.
	earlyLines int
	follow     *time.Timer

	max   int        // lines kept in the tail
	ring  []tailLine // complete lines, oldest at ring[start] once full; buffers reused
	start int

	partial   []byte // the line being written, without its terminator
	truncated bool   // partial hit maxTailLineBytes and lost bytes
	pendingCR bool   // saw '\r'; the next byte decides "\r\n" or overwrite
}

// earlyLimit bounds what waits for the file to be open: beyond it, Write
// waits for the file.
const earlyLimit = 1 << 20

// shortLimit and shortLines bound the output a short log keeps without a
// file: no more lines than a failed task's report shows.
const (
	shortLimit = 8 << 10
	shortLines = 10
)

// followAfter is how long a task with a short log runs before its file is
// made all the same: someone may want to follow it.
const followAfter = time.Second

// OpenTaskLog opens path for appending (0600, parent directories 0700) and
// keeps the last tailLines lines in memory. A resumed task appends to the log
// of its earlier attempts rather than replacing it. The parent directory is
// made at once (its error is returned); the file is opened meanwhile, and
// is whole once Close returns.
func OpenTaskLog(path string, tailLines int) (*TaskLog, error) {
	return newTaskLog(path, tailLines, false)
}

// OpenShortTaskLog is OpenTaskLog for output that is often a few lines (a
// command's): the file is made only once the output is more than the tail
// holds whole (or than shortLines), or the task has run a second. A task that ends before, its
// output whole in its tail, has no file: Path is then "" after Close. An
// earlier attempt's file is appended to as ever.
func OpenShortTaskLog(path string, tailLines int) (*TaskLog, error) {
	return newTaskLog(path, tailLines, true)
}

// logDirs are the task-log directories this process made (true) or found
// (false), and madeLogs the task logs it made: in a directory it made, a
// log is there only if it made it. Each task of a run of short ones would
// otherwise look for its directory and its file on disk (a path walk
// each, which costs a good part of an `echo`).
var logDirs, madeLogs sync.Map // path → bool; path → struct{}

func newTaskLog(path string, tailLines int, short bool) (*TaskLog, error) {
	dir := filepath.Dir(path)
	made, err := logDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open task log: %w", err)
	}
	t := &TaskLog{lastFlush: time.Now(), path: path, max: max(tailLines, 0)}
	if short && !logExists(path, made) {
		t.follow = time.AfterFunc(followAfter, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if !t.closed && t.opened == nil {
				t.openAsideLocked()
			}
		})
		return t, nil
	}
	t.openAsideLocked()
	return t, nil
}

// logDir makes dir, once, and reports whether this process made it.
func logDir(dir string) (made bool, err error) {
	if v, ok := logDirs.Load(dir); ok {
		return v.(bool), nil
	}
	err = os.Mkdir(dir, dirMode)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(dir), dirMode); err == nil {
			err = os.Mkdir(dir, dirMode)
		}
	}
	switch {
	case err == nil:
		made = true
	case errors.Is(err, fs.ErrExist):
		// There already (a resumed session): as MkdirAll, a directory.
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			return false, &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
	default:
		return false, err
	}
	logDirs.Store(dir, made)
	return made, nil
}

// forgetLogDir forgets dir and the logs made in it, before it is removed.
func forgetLogDir(dir string) {
	logDirs.Delete(dir)
	madeLogs.Range(func(k, _ any) bool {
		if filepath.Dir(k.(string)) == dir {
			madeLogs.Delete(k)
		}
		return true
	})
}

// logExists reports whether the log at path is there, in a directory this
// process made (made) or not.
func logExists(path string, made bool) bool {
	if made {
		_, ok := madeLogs.Load(path)
		return ok
	}
	_, err := os.Lstat(path)
	return err == nil
}

// openAsideLocked starts making the file; mu is held (or t not shared yet).
func (t *TaskLog) openAsideLocked() {
	path := t.path
	t.opened = make(chan struct{})
	go func() {
		defer close(t.opened)
		// Not openAppend: the directory is made already, and must not be
		// made again if the session was removed meanwhile.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, fileMode)
		if err == nil {
			madeLogs.Store(path, struct{}{})
			_ = f.Chmod(fileMode) // as openAppend: private even if it was not
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if err != nil {
			t.openErr, t.early = fmt.Errorf("open task log: %w", err), nil
			return
		}
		t.f, t.w = f, bufio.NewWriterSize(f, 64<<10)
		if len(t.early) > 0 {
			_, t.openErr = t.w.Write(t.early)
			t.early = nil
		}
	}()
}

// writeLocked writes p to the file, or keeps it until the file is open.
func (t *TaskLog) writeLocked(p []byte) (int, error) {
	if t.w != nil {
		return t.w.Write(p)
	}
	if t.openErr != nil {
		return len(p), t.openErr // the tail goes on without the file
	}
	if t.opened == nil {
		t.early = append(t.early, p...)
		t.earlyLines += bytes.Count(p, []byte{'\n'})
		if len(t.early) > shortLimit || t.earlyLines > min(t.max, shortLines) {
			t.openAsideLocked() // more than the tail holds
		}
		return len(p), nil
	}
	if len(t.early)+len(p) > earlyLimit {
		t.mu.Unlock()
		<-t.opened
		t.mu.Lock()
		if t.closed {
			return 0, os.ErrClosed
		}
		return t.writeLocked(p)
	}
	t.early = append(t.early, p...)
	return len(p), nil
}

// Path is the file the log writes to; "" for a short log closed without
// one.
func (t *TaskLog) Path() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.path
}

// Write appends p to the file unchanged and feeds the bytes that reached the
// file into the tail.
func (t *TaskLog) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, os.ErrClosed
	}
	// A secret the task prints is written as *** (the tail, which the
	// session keeps, too).
	if r := RedactBytes(p); len(r) != len(p) || !bytes.Equal(r, p) {
		n, err := t.writeLocked(r)
		t.feed(r[:n])
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
	n, err := t.writeLocked(p)
	t.feed(p[:n])
	// Someone may be following the file: it lags by at most this much.
	if now := time.Now(); err == nil && t.w != nil && now.Sub(t.lastFlush) > logFlushEvery {
		t.lastFlush = now
		err = t.w.Flush()
	}
	return n, err
}

// tailLine is one kept line; its buffer is reused when the ring wraps, so a
// busy task does not allocate a string per line.
type tailLine struct {
	text      []byte
	truncated bool
}

func (t *TaskLog) feed(p []byte) {
	if t.max == 0 {
		return
	}
	// Only the last max lines of p can reach the tail: skip to just after
	// the (max+1)-th newline from the end.
	cut, count := len(p), 0
	for count <= t.max {
		i := bytes.LastIndexByte(p[:cut], '\n')
		if i < 0 {
			break
		}
		cut, count = i, count+1
	}
	if count > t.max {
		p = p[cut+1:]
		t.partial, t.truncated, t.pendingCR = t.partial[:0], false, false
	}
	for _, c := range p {
		if t.pendingCR {
			t.pendingCR = false
			if c == '\n' {
				t.endLine()
				continue
			}
			// A lone '\r' returns the cursor, as progress bars do: what
			// follows replaces the line, so keep only the final state.
			t.partial = t.partial[:0]
			t.truncated = false
		}
		switch c {
		case '\n':
			t.endLine()
		case '\r':
			t.pendingCR = true
		default:
			if len(t.partial) < maxTailLineBytes {
				t.partial = append(t.partial, c)
			} else {
				t.truncated = true
			}
		}
	}
}

// wholeInTailLocked reports whether the tail gives back the output kept
// without a file byte for byte.
func (t *TaskLog) wholeInTailLocked() bool {
	if len(t.early) == 0 {
		return true
	}
	lines := t.earlyLines
	if t.early[len(t.early)-1] != '\n' {
		lines++
	}
	if lines > shortLines {
		return false
	}
	whole := strings.Join(t.tailLocked(), "\n")
	if t.early[len(t.early)-1] == '\n' {
		whole += "\n"
	}
	return whole == string(t.early)
}

func lineString(b []byte, truncated bool) string {
	s := string(b)
	if truncated {
		s += "…"
	}
	// The byte cap can split a multi-byte character.
	return strings.ToValidUTF8(s, "\uFFFD")
}

func (t *TaskLog) endLine() {
	if len(t.ring) < t.max {
		t.ring = append(t.ring, tailLine{text: append([]byte(nil), t.partial...), truncated: t.truncated})
	} else {
		l := &t.ring[t.start]
		l.text, l.truncated = append(l.text[:0], t.partial...), t.truncated
		t.start = (t.start + 1) % t.max
	}
	t.partial = t.partial[:0]
	t.truncated = false
}

// Tail returns up to tailLines last lines, oldest first. An unterminated
// final line counts as a line, since it is what the task shows right now.
func (t *TaskLog) Tail() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tailLocked()
}

func (t *TaskLog) tailLocked() []string {
	if t.max == 0 {
		return nil
	}
	out := make([]string, 0, len(t.ring)+1)
	for i := range t.ring {
		l := t.ring[(t.start+i)%len(t.ring)]
		out = append(out, lineString(l.text, l.truncated))
	}
	if len(t.partial) > 0 || t.truncated {
		out = append(out, lineString(t.partial, t.truncated))
	}
	if len(out) > t.max {
		out = out[len(out)-t.max:]
	}
	return out
}

// Close waits for the file to be open, writes what is left and closes it;
// the tail stays readable. Closing twice is a no-op. A short log whose
// output is whole in its tail makes no file.
func (t *TaskLog) Close() error {
	t.mu.Lock()
	if t.follow != nil {
		t.follow.Stop()
	}
	if !t.closed && t.opened == nil {
		if t.wholeInTailLocked() {
			t.closed, t.path, t.early = true, "", nil
		} else {
			t.openAsideLocked()
		}
	}
	opened := t.opened
	t.mu.Unlock()
	if opened != nil {
		<-opened
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if t.f == nil {
		return t.openErr
	}
	ferr := t.w.Flush()
	err := t.f.Close()
	if err == nil {
		err = ferr
	}
	if err == nil {
		err = t.openErr
	}
	t.f, t.w = nil, nil
	return err
}
