package agentstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxLine is the longest line given whole. A CLI may print a line of any
// length (a tool result holding a whole file, a final message of
// megabytes); holding it whole would let it hold vibeteam's memory
// hostage, and dropping it loses what it said (a result with is_error,
// its cost, its denials). So a longer line that is a JSON document is read
// to its end with its long strings cut (see Line), and only a document
// that is still too large once cut is lost, and said to be.
const MaxLine = 4 << 20

// headKeep is how much of an overlong line that is not given as JSON
// (text, or a document that could not be read) is kept: its beginning.
const headKeep = 64 << 10

// Line is one line of a stream, without its newline (and a \r before it).
//
// A line of at most MaxLine bytes is given whole. A longer one is given
// with Cut set, as:
//   - a JSON object or array: the same document, compact, each string of
//     more than 80 KiB cut to its first 16 KiB and its last 64 KiB with
//     " … (N MB cut) … " between (the end of a final message is where an
//     agent step's result is, and it is kept whole);
//   - anything else, or a JSON line that is not valid: its first 64 KiB;
//   - a valid JSON document still larger than MaxLine once cut (millions
//     of elements): its first 64 KiB, with Lost set. What it said is
//     unknown, and a reader of a structured stream must not go on as if
//     it had read it.
//
// Memory is bounded whatever the line's length: about MaxLine twice.
type Line struct {
	Text []byte // valid only during the call it is given to
	Len  int64  // the line's length in the stream, in bytes
	Cut  bool   // Text is not the whole line
	Lost bool   // a JSON document too large to read even cut
}

// Lines cuts a stream into lines as chunks arrive (push: Write each chunk,
// Flush at the end). LineReader does the same from an io.Reader (pull).
type Lines struct {
	acc lineAcc
}

// Write adds a chunk and calls fn for each line it completes.
func (l *Lines) Write(p []byte, fn func(Line)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.acc.add(p)
			return
		}
		l.acc.add(p[:i])
		fn(l.acc.end())
		p = p[i+1:]
	}
}

// Flush calls fn for a last line that had no newline.
func (l *Lines) Flush(fn func(Line)) {
	if l.acc.n > 0 {
		fn(l.acc.end())
	}
}

// LineReader reads the lines of an io.Reader, as Lines cuts them: a
// reader of a JSON-lines protocol (an agent's stream, ACP's JSON-RPC on a
// pipe) gets every line, or learns it lost one, with bounded memory.
type LineReader struct {
	r   *bufio.Reader
	acc lineAcc
	err error
}

// NewLineReader reads r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next is the next line; its Text is valid until the next call. At the
// end of the stream it returns io.EOF (a last line without a newline is
// given first); a read error is returned once the lines before it are.
func (lr *LineReader) Next() (Line, error) {
	for lr.err == nil {
		seg, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			lr.acc.add(seg[:len(seg)-1])
			return lr.acc.end(), nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.acc.add(seg)
		default:
			lr.acc.add(seg)
			lr.err = err
		}
	}
	if lr.acc.n > 0 {
		return lr.acc.end(), nil
	}
	return Line{}, lr.err
}

// lineAcc gathers one line: whole while it fits in MaxLine, then its
// head and, for JSON, a cut copy.
type lineAcc struct {
	buf    []byte
	n      int64
	long   bool      // past MaxLine
	shrink *shrinker // the cut copy of a long JSON line
}

func (a *lineAcc) add(p []byte) {
	a.n += int64(len(p))
	switch {
	case !a.long && len(a.buf)+len(p) <= MaxLine:
		a.buf = append(a.buf, p...)
	case !a.long:
		a.goLong(p)
	case a.shrink != nil:
		a.shrink.write(p)
	}
}

// goLong keeps the head of a line that outgrows MaxLine with p and, if it
// begins as JSON, starts its cut copy with all of it.
func (a *lineAcc) goLong(p []byte) {
	a.long = true
	first := bytes.TrimLeft(a.buf, " \t\r")
	if len(first) == 0 {
		first = bytes.TrimLeft(p, " \t\r")
	}
	if len(first) > 0 && (first[0] == '{' || first[0] == '[') {
		a.shrink = &shrinker{}
		a.shrink.write(a.buf)
		a.shrink.write(p)
	}
	if len(a.buf) < headKeep {
		a.buf = append(a.buf, p[:min(len(p), headKeep-len(a.buf))]...)
	}
	a.buf = a.buf[:min(len(a.buf), headKeep)]
}

// end gives the line gathered and starts the next.
func (a *lineAcc) end() Line {
	ln := Line{Text: bytes.TrimSuffix(a.buf, []byte("\r")), Len: a.n}
	if a.long {
		ln.Cut = true
		if a.shrink != nil {
			switch out, ok, lost := a.shrink.finish(); {
			case ok:
				ln.Text = out
			case lost:
				ln.Lost = true
			}
		}
	}
	if a.long {
		// A line of megabytes does not keep its buffers for the short ones
		// after it; ln still holds what it gives.
		a.buf, a.shrink = nil, nil
	}
	a.buf, a.n, a.long = a.buf[:0], 0, false
	return ln
}
