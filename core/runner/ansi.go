package runner

// Stripper removes terminal control sequences from a byte stream, keeping
// printable text, newlines and tabs. It keeps its state between calls, so a
// sequence split across two reads is still removed. It is a byte-level state
// machine rather than a regexp (acarl005/stripansi measured ~23 MB/s here,
// too slow for a PTY stream); see DESIGN.md §7.
type Stripper struct {
	st      stripState
	pending bool // a '\r' was seen and not yet resolved
	param   int  // numeric parameter of the current CSI sequence
}

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
	for _, b := range p {
		switch s.st {
		case sText:
			switch {
			case b == 0x1b:
				s.st = sEsc
			case b == '\r':
				if s.pending {
					dst = append(dst, '\n')
				}
				s.pending = true
				continue
			case b == '\n':
				s.pending = false
				dst = append(dst, '\n')
				continue
			case b == '\t' || b >= 0x20 && b != 0x7f:
				if s.pending {
					// A lone carriage return starts the line over (progress
					// redraws); in a log that reads best as a new line.
					dst = append(dst, '\n')
					s.pending = false
				}
				dst = append(dst, b)
			}
		case sEsc:
			switch b {
			case '[':
				s.st = sCSI
				s.param = 0
			case ']', 'P', 'X', '^', '_':
				s.st = sString
			case '(', ')', '*', '+', '-', '.', '/', '#', '%', ' ':
				s.st = sCharset
			default:
				s.st = sText
			}
		case sCSI:
			switch {
			case b >= '0' && b <= '9':
				if s.param < 1000 {
					s.param = s.param*10 + int(b-'0')
				}
			case b == ';':
				s.param = 0
			case b >= 0x40 && b <= 0x7e:
				s.st = sText
				// TUIs (Claude's Ink) draw spaces as cursor moves; without
				// them the text runs together.
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
		case sString:
			switch b {
			case 0x07:
				s.st = sText
			case 0x1b:
				s.st = sStringEs
			}
		case sStringEs:
			if b == '\\' {
				s.st = sText
			} else {
				s.st = sString
			}
		case sCharset:
			s.st = sText
		}
	}
	return dst
}

// StripString is Strip on a whole string with a fresh state.
func StripString(s string) string {
	var st Stripper
	return string(st.Strip(nil, []byte(s)))
}
