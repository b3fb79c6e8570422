package runner

// Stripper removes terminal control sequences from a byte stream, keeping
// printable text, newlines and tabs. It keeps its state between calls, so a
// sequence split across two reads is still removed. It is a byte-level state
// machine rather than a regexp (acarl005/stripansi measured ~23 MB/s here,
// too slow for a PTY stream); see DESIGN.md §7.
//
// It also recognises the queries a TUI sends to learn about its terminal
// (cursor position, device attributes, colours) and reports each to
// OnQuery, so they are found in the same pass, off the PTY read path.
type Stripper struct {
	OnQuery func(Query)

	st      stripState
	pending bool // a '\r' was seen and not yet resolved
	param   int  // numeric parameter of the current CSI sequence
	params  int  // how many parameters the CSI sequence has had
	priv    byte // CSI private marker ('?', '>', ...), 0 if none
	osc     [6]byte
	oscLen  int
	isOSC   bool
}

// Query is a terminal query found in the output.
type Query uint8

const (
	QueryCursor      Query = iota + 1 // ESC [ 6 n
	QueryStatus                       // ESC [ 5 n
	QueryPrimaryDA                    // ESC [ c, ESC [ 0 c
	QuerySecondaryDA                  // ESC [ > c
	QueryForeground                   // OSC 10 ; ?
	QueryBackground                   // OSC 11 ; ?
)

type stripState uint8

const (
	sText     stripState = iota
	sEsc                 // after ESC
	sCSI                 // ESC [ ... final byte
	sString              // OSC / DCS / SOS / PM / APC: until BEL or ESC \
	sStringEs            // ESC inside a string: expecting '\'
	sCharset             // ESC ( X and friends: one more byte
)

// Strip appends the text of p to dst and returns it.
func (s *Stripper) Strip(dst, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch s.st {
		case sText:
			if b >= 0x20 && b != 0x7f && !s.pending {
				// The common case: a run of printable bytes, copied at once.
				j := i + 1
				for j < len(p) && p[j] >= 0x20 && p[j] != 0x7f {
					j++
				}
				dst = append(dst, p[i:j]...)
				i = j - 1
				continue
			}
			dst = s.textByte(dst, b)
		case sEsc:
			s.escByte(b)
		case sCSI:
			dst = s.csiByte(dst, b)
		case sString:
			s.stringByte(b)
		case sStringEs:
			if b == '\\' {
				s.st = sText
				s.oscEnd()
			} else {
				s.st = sString
			}
		case sCharset:
			s.st = sText
		}
	}
	return dst
}

// textByte takes a byte of text that is no printable run: an escape, a
// line end, a tab.
func (s *Stripper) textByte(dst []byte, b byte) []byte {
	switch {
	case b == 0x1b:
		s.st = sEsc
	case b == '\r':
		if s.pending {
			dst = append(dst, '\n')
		}
		s.pending = true
	case b == '\n':
		s.pending = false
		dst = append(dst, '\n')
	case b == '\t' || b >= 0x20 && b != 0x7f:
		if s.pending {
			// A lone carriage return starts the line over (progress
			// redraws); in a log that reads best as a new line.
			dst = append(dst, '\n')
			s.pending = false
		}
		dst = append(dst, b)
	}
	return dst
}

// escByte takes the byte after ESC: the kind of sequence it starts.
func (s *Stripper) escByte(b byte) {
	switch b {
	case '[':
		s.st = sCSI
		s.param, s.params, s.priv = 0, 0, 0
	case ']':
		s.st = sString
		s.isOSC, s.oscLen = true, 0
	case 'P', 'X', '^', '_':
		s.st = sString
		s.isOSC = false
	case '(', ')', '*', '+', '-', '.', '/', '#', '%', ' ':
		s.st = sCharset
	default:
		s.st = sText
	}
}

// csiByte takes a byte of a control sequence: a parameter, or its final
// byte, which may answer a query or stand for spaces.
func (s *Stripper) csiByte(dst []byte, b byte) []byte {
	switch {
	case b >= '0' && b <= '9':
		if s.param < 1000 {
			s.param = s.param*10 + int(b-'0')
		}
		if s.params == 0 {
			s.params = 1
		}
	case b == ';':
		s.param = 0
		s.params++
	case b >= '<' && b <= '?':
		s.priv = b
	case b >= 0x40 && b <= 0x7e:
		s.st = sText
		if s.OnQuery != nil && (b == 'n' || b == 'c') && s.params <= 1 {
			s.csiQuery(b)
		}
		// TUIs (Claude's Ink) draw spaces as cursor moves; without them
		// the text runs together.
		switch b {
		case 'C':
			n := max(s.param, 1)
			for i := 0; i < min(n, 200); i++ {
				dst = append(dst, ' ')
			}
		case 'G':
			dst = append(dst, ' ')
		}
	}
	return dst
}

// stringByte takes a byte of an OSC, DCS, SOS, PM or APC string: its end,
// or an OSC's text kept.
func (s *Stripper) stringByte(b byte) {
	switch b {
	case 0x07:
		s.st = sText
		s.oscEnd()
	case 0x1b:
		s.st = sStringEs
	default:
		if s.isOSC && s.oscLen < len(s.osc) {
			s.osc[s.oscLen] = b
			s.oscLen++
		}
	}
}

// StripString is Strip on a whole string with a fresh state.
func StripString(s string) string {
	var st Stripper
	return string(st.Strip(nil, []byte(s)))
}

func (s *Stripper) csiQuery(final byte) {
	switch {
	case final == 'n' && s.priv == 0 && s.param == 6:
		s.OnQuery(QueryCursor)
	case final == 'n' && s.priv == 0 && s.param == 5:
		s.OnQuery(QueryStatus)
	case final == 'c' && s.priv == 0 && s.param == 0:
		s.OnQuery(QueryPrimaryDA)
	case final == 'c' && s.priv == '>' && s.param == 0:
		s.OnQuery(QuerySecondaryDA)
	}
}

// oscEnd reports an OSC colour query when its string ends.
func (s *Stripper) oscEnd() {
	if !s.isOSC || s.OnQuery == nil {
		return
	}
	switch string(s.osc[:s.oscLen]) {
	case "10;?":
		s.OnQuery(QueryForeground)
	case "11;?":
		s.OnQuery(QueryBackground)
	}
	s.isOSC = false
}
