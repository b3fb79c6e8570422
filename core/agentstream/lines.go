package agentstream

import "bytes"

// maxLine bounds a line kept while waiting for its end: a CLI that prints a
// huge line (a tool result with a whole file) must not hold vibeteam's
// memory hostage. What is past it is dropped, and the line, cut, fails to
// parse as JSON and is ignored.
const maxLine = 4 << 20

// Lines cuts a stream into lines as chunks arrive.
type Lines struct {
	buf []byte
	cut bool // the line in buf outgrew maxLine
}

// Write adds a chunk and calls fn for each line it completes, without the
// newline (and without a \r before it). fn must not keep the slice.
func (l *Lines) Write(p []byte, fn func(line []byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.add(p)
			return
		}
		l.add(p[:i])
		if !l.cut {
			fn(bytes.TrimSuffix(l.buf, []byte("\r")))
		}
		l.buf, l.cut = l.buf[:0], false
		p = p[i+1:]
	}
}

// Flush calls fn for a last line that had no newline.
func (l *Lines) Flush(fn func(line []byte)) {
	if len(l.buf) > 0 && !l.cut {
		fn(bytes.TrimSuffix(l.buf, []byte("\r")))
	}
	l.buf, l.cut = l.buf[:0], false
}

func (l *Lines) add(p []byte) {
	if l.cut {
		return
	}
	if len(l.buf)+len(p) > maxLine {
		l.cut = true
		return
	}
	l.buf = append(l.buf, p...)
}
