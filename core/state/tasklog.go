package state

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
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

	max   int        // lines kept in the tail
	ring  []tailLine // complete lines, oldest at ring[start] once full; buffers reused
	start int

	partial   []byte // the line being written, without its terminator
	truncated bool   // partial hit maxTailLineBytes and lost bytes
	pendingCR bool   // saw '\r'; the next byte decides "\r\n" or overwrite
}

// OpenTaskLog opens path for appending (0600, parent directories 0700) and
// keeps the last tailLines lines in memory. A resumed task appends to the log
// of its earlier attempts rather than replacing it.
func OpenTaskLog(path string, tailLines int) (*TaskLog, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("open task log: %w", err)
	}
	return &TaskLog{f: f, w: bufio.NewWriterSize(f, 64<<10), lastFlush: time.Now(), path: path, max: max(tailLines, 0)}, nil
}

// Path is the file the log writes to.
func (t *TaskLog) Path() string { return t.path }

// Write appends p to the file unchanged and feeds the bytes that reached the
// file into the tail.
func (t *TaskLog) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return 0, os.ErrClosed
	}
	// A secret the task prints is written as *** (the tail, which the
	// session keeps, too).
	if r := RedactBytes(p); len(r) != len(p) || !bytes.Equal(r, p) {
		if _, err := t.w.Write(r); err != nil {
			return 0, err
		}
		t.feed(r)
		return len(p), nil
	}
	n, err := t.w.Write(p)
	t.feed(p[:n])
	// Someone may be following the file: it lags by at most this much.
	if now := time.Now(); err == nil && now.Sub(t.lastFlush) > logFlushEvery {
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

// Close closes the file; the tail stays readable. Closing twice is a no-op.
func (t *TaskLog) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	ferr := t.w.Flush()
	err := t.f.Close()
	if err == nil {
		err = ferr
	}
	t.f = nil
	return err
}
