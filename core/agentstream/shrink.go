package agentstream

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The strings of an overlong JSON line are cut to their head and tail.
const (
	stringHead = 16 << 10
	stringTail = 64 << 10
	// tailMark is how often a safe place to cut a string's tail is noted.
	tailMark = 4 << 10
	// maxLiteral bounds a number, true, false or null: a longer one is not
	// JSON a CLI prints.
	maxLiteral = 64
)

type shrinkState uint8

const (
	inValue    shrinkState = iota // between tokens
	inString                      // in a string
	inEscape                      // after a backslash in a string
	inUnicode                     // in the hex digits of \uXXXX
	shrinkDone                    // the document ended: only blanks may follow
	shrinkBad                     // not JSON after all
)

// shrinker reads a JSON document a chunk at a time, as long as it may be,
// and writes a compact copy of it in which each long string is cut to its
// head and tail: what a reader of an agent's stream needs (the type, the
// flags, the usage, the cost, the end of the final message) at a bounded
// cost. It checks only the document's shape as it goes; the copy is
// checked whole at the end.
type shrinker struct {
	out   []byte
	state shrinkState
	depth int
	lit   int // bytes of the literal being read
	hex   int // hex digits left of a \u escape
	// quote and slash are where the next quote and backslash are in the
	// chunk being read (its length if it has none), -1 before a search.
	quote, slash int
	code         rune // the \u escape's value so far
	// high: the last thing read was a \u escape of a high surrogate,
	// which the next escape completes: no cut between the two.
	high bool
	lost bool // the copy outgrew MaxLine: the document is too large

	// The string being read: its raw (escaped) length so far, whether its
	// head is written and the rest goes to tail, the safe places to cut
	// tail (offsets not inside an escape), and what was cut from it.
	strLen  int
	inTail  bool
	tail    []byte
	marks   []int
	dropped int64
}

func (s *shrinker) write(p []byte) {
	s.quote, s.slash = -1, -1
	for i := 0; i < len(p) && s.state != shrinkBad && !s.lost; {
		switch s.state {
		case inString:
			i = s.stringBytes(p, i)
			continue
		case inEscape:
			s.strByte(p[i])
			s.state = inString
			if p[i] == 'u' {
				s.state, s.hex, s.code = inUnicode, 4, 0
			}
		case inUnicode:
			s.strByte(p[i])
			s.code = s.code<<4 | hexValue(p[i])
			if s.hex--; s.hex == 0 {
				s.state = inString
				s.high = s.code >= 0xD800 && s.code < 0xDC00
			}
		default:
			s.valueByte(p[i])
		}
		i++
	}
}

// valueByte reads a byte between strings.
func (s *shrinker) valueByte(b byte) {
	if b != ' ' && b != '\t' && b != '\r' && s.state == shrinkDone {
		s.state = shrinkBad
		return
	}
	switch b {
	case ' ', '\t', '\r':
		s.lit = 0
		return
	case '"':
		s.lit, s.strLen, s.inTail, s.dropped = 0, 0, false, 0
		s.state = inString
	case '{', '[':
		s.lit = 0
		s.depth++
	case '}', ']':
		s.lit = 0
		if s.depth--; s.depth < 0 {
			s.state = shrinkBad
			return
		}
	case ',', ':':
		s.lit = 0
	default:
		if s.lit++; s.lit > maxLiteral {
			s.state = shrinkBad
			return
		}
	}
	s.emit(b)
	if s.depth == 0 && s.state == inValue && s.lit == 0 {
		s.state = shrinkDone
	}
}

// stringBytes reads the string bytes of p from i up to the next quote or
// backslash, and that one, and returns where it stopped. The places of
// the next quote and backslash are kept for the calls that follow, so
// that a string of many escapes is not searched again to its end at each.
// A control byte, which JSON does not allow in a string, is not looked
// for here: the copy is checked whole at the end.
func (s *shrinker) stringBytes(p []byte, i int) int {
	if s.quote < i {
		s.quote = indexFrom(p, i, '"')
	}
	if s.slash < i {
		s.slash = indexFrom(p, i, '\\')
	}
	j := min(s.quote, s.slash)
	if j > i {
		s.high = false
		s.plain(p[i:j])
	}
	switch {
	case j == len(p):
	case p[j] == '"':
		s.endString()
	default:
		s.safe()
		s.strByte('\\')
		s.state = inEscape
	}
	return j + 1
}

// indexFrom is the index of the first b in p from i, len(p) if none.
func indexFrom(p []byte, i int, b byte) int {
	if k := bytes.IndexByte(p[i:], b); k >= 0 {
		return i + k
	}
	return len(p)
}

// plain takes plain string bytes: to the head while it has room, then to
// the tail, in pieces whose starts are safe places to cut.
func (s *shrinker) plain(p []byte) {
	for len(p) > 0 {
		if !s.inTail {
			room := stringHead - s.strLen
			if room >= len(p) {
				s.emitAll(p)
				s.strLen += len(p)
				return
			}
			n := runeCut(p, room)
			s.emitAll(p[:n])
			s.strLen += n
			p = p[n:]
			s.inTail = true
		}
		n := len(p)
		if n > tailMark {
			n = runeCut(p, tailMark)
		}
		s.safe()
		s.tail = append(s.tail, p[:n]...)
		s.trimTail(2 * stringTail)
		p = p[n:]
	}
}

// runeCut is where to cut p at about n bytes: before a rune, if one starts
// close to n.
func runeCut(p []byte, n int) int {
	for i := n; i > n-4 && i > 0; i-- {
		if p[i]&0xC0 != 0x80 {
			return i
		}
	}
	return n
}

func hexValue(b byte) rune {
	switch {
	case b >= '0' && b <= '9':
		return rune(b - '0')
	case b >= 'a' && b <= 'f':
		return rune(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return rune(b-'A') + 10
	}
	return 0
}

// strByte takes one byte of an escape sequence.
func (s *shrinker) strByte(b byte) {
	if !s.inTail {
		s.emit(b)
		s.strLen++
		return
	}
	s.tail = append(s.tail, b)
	s.trimTail(2 * stringTail)
}

// safe notes that the string may be cut here: in the head, by starting
// the tail once the head is full; in the tail, as a mark.
func (s *shrinker) safe() {
	if s.high {
		return
	}
	if !s.inTail {
		if s.strLen >= stringHead {
			s.inTail = true
			s.tail, s.marks = s.tail[:0], append(s.marks[:0], 0)
		}
		return
	}
	if len(s.marks) == 0 || len(s.tail)-s.marks[len(s.marks)-1] >= tailMark {
		s.marks = append(s.marks, len(s.tail))
	}
}

// trimTail drops the oldest part of a tail grown past limit, at the last
// mark that keeps at least stringTail bytes. While the string is read the
// limit is twice that, so that the copy is made once in a while only.
func (s *shrinker) trimTail(limit int) {
	if len(s.tail) <= limit {
		return
	}
	keepFrom := -1
	for i, m := range s.marks {
		if m > len(s.tail)-stringTail {
			break
		}
		keepFrom = i
	}
	if keepFrom <= 0 {
		return
	}
	cut := s.marks[keepFrom]
	s.dropped += int64(cut)
	s.tail = append(s.tail[:0], s.tail[cut:]...)
	n := 0
	for _, m := range s.marks[keepFrom:] {
		s.marks[n] = m - cut
		n++
	}
	s.marks = s.marks[:n]
}

func (s *shrinker) endString() {
	s.state = inValue
	if s.inTail {
		s.trimTail(stringTail)
		if s.dropped > 0 {
			s.emitAll(fmt.Appendf(nil, " … (%s cut) … ", sizeText(s.dropped)))
		}
		s.emitAll(s.tail)
	}
	s.tail, s.marks, s.inTail, s.high = s.tail[:0], s.marks[:0], false, false
	s.emit('"')
	if s.depth == 0 {
		s.state = shrinkDone
	}
}

func (s *shrinker) emit(b byte) {
	if len(s.out) >= MaxLine {
		s.lost = true
		return
	}
	s.out = append(s.out, b)
}

func (s *shrinker) emitAll(p []byte) {
	if len(s.out)+len(p) > MaxLine {
		s.lost = true
		return
	}
	s.out = append(s.out, p...)
}

// finish gives the cut document: ok if it is JSON, lost if it was too
// large even cut.
func (s *shrinker) finish() (out []byte, ok, lost bool) {
	if s.lost {
		return nil, false, true
	}
	if s.state != shrinkDone || !json.Valid(s.out) {
		return nil, false, false
	}
	return s.out, true, false
}

// sizeText is a byte count for a person: 512 B, 12 KB, 4.2 MB.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
