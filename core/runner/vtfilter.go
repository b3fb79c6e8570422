package runner

// screenFilter removes, from the bytes fed to the virtual terminal, the
// sequences a real terminal answers or ignores without touching its screen,
// but which hinshun/vt10x would execute as something else:
//
//   - CSI with a private marker '<', '=' or '>' (kitty keyboard push/pop/set
//     `CSI > 1 u`, `CSI < u`, XTVERSION `CSI > 0 q`, modifyOtherKeys
//     `CSI > 4 ; 1 m`, DA2 `CSI > c`): vt10x ignores the marker and runs
//     `CSI u` as restore-cursor, `CSI m` as an attribute reset.
//   - `CSI ? u` (the kitty keyboard query): restore-cursor in vt10x, so the
//     next partial redraw of the TUI lands on the wrong rows.
//   - queries and reports: DA1 `CSI c`, DSR `CSI n`, DECRQM `CSI ? Ps $ p`,
//     and any CSI with intermediate bytes (cursor style `CSI Ps SP q`, ...)
//     other than DECSTR `CSI ! p`.
//   - synchronized output `CSI ? 2026 h/l` (vt10x has no such mode).
//   - OSC, DCS, APC, PM and SOS strings (titles, colour queries, OSC 7501,
//     hyperlinks, XTGETTCAP, kitty graphics): none changes the text screen.
//
// Everything else passes through unchanged, so vt10x's own state machine
// sees exactly the stream a terminal would draw. The filter keeps its state
// between calls: a sequence split across two reads is still recognised.
//
// Measured against github.com/charmbracelet/x/vt v0.1.0 (the newest in the
// Go proxy, 2026-11-25) on this machine: on the recorded Claude Code
// streams of testdata/screens x/vt renders the 2.1.332 menus right without a
// filter, but leaves stale text on 5 of the 13 screens ("4. Noe Code" in a
// permission menu): 8 of 13 golden screens, vt10x unfiltered 12 of 13
// (the kitty query), vt10x filtered 13 of 13; it
// parses 1.6 MB/s against vt10x's 8.9 MB/s on the mixed stream of
// BenchmarkPTYThroughput; and it writes its answers to queries into an
// io.Pipe that blocks the emulator until someone reads them. vt10x behind
// this filter stays.
type screenFilter struct {
	st  filterState
	seq []byte // the CSI being collected (from ESC)
	// inSync: a synchronized update (CSI ? 2026 h) has begun and not yet
	// ended (CSI ? 2026 l); syncMark is where it began in the output of
	// apply (its dst), so that the caller can hold the frame being drawn
	// back from the screen until it is whole, as a terminal does.
	inSync     bool
	syncMark   int
	syncStarts int // updates begun, ever
}

type filterState uint8

const (
	fText    filterState = iota
	fEsc                 // after ESC
	fCSI                 // ESC [ ...
	fStr                 // inside OSC/DCS/APC/PM/SOS
	fStrEsc              // ESC inside a string
	fCharset             // ESC ( X and friends: one more byte
)

// maxCSI bounds a CSI kept while its final byte is awaited; a longer one is
// not a real sequence and passes through as it is (vt10x gives up at 256).
const maxCSI = 64

// apply appends the filtered form of p to dst and returns it.
func (f *screenFilter) apply(dst, p []byte) []byte {
	start := 0 // start of the pending run of text to copy
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch f.st {
		case fText:
			if b == 0x1b {
				dst = append(dst, p[start:i]...)
				start = i + 1
				f.st = fEsc
			}
			continue
		case fEsc:
			dst = f.escByte(dst, b)
			start = i + 1
		case fCharset:
			f.st = fText
			dst = append(dst, b)
			start = i + 1
		case fCSI:
			start = i + 1
			dst = f.csiByte(dst, b)
		case fStr:
			start = i + 1
			switch b {
			case 0x07, 0x18, 0x1a:
				f.st = fText
			case 0x1b:
				f.st = fStrEsc
			}
		case fStrEsc:
			start = i + 1
			switch b {
			case '\\':
				f.st = fText
			case 0x1b:
			default:
				f.st = fStr
			}
		}
	}
	if f.st == fText {
		dst = append(dst, p[start:]...)
	}
	return dst
}

// escByte takes the byte after ESC: a CSI is kept until its end, a string
// dropped, anything else passes.
func (f *screenFilter) escByte(dst []byte, b byte) []byte {
	switch b {
	case '[':
		f.st = fCSI
		f.seq = append(f.seq[:0], 0x1b, '[')
	case ']', 'P', 'X', '^', '_':
		f.st = fStr
	case '(', ')', '*', '+', '-', '.', '/', '#', '%', ' ':
		f.st = fCharset
		dst = append(dst, 0x1b, b)
	case 0x1b:
		dst = append(dst, 0x1b) // ESC ESC: the first one is lone
		f.st = fEsc
	default:
		f.st = fText
		dst = append(dst, 0x1b, b)
	}
	return dst
}

// csiByte takes a byte of a CSI: at its final byte the sequence reaches
// the screen (keepCSI) or is dropped, and a synchronized update's start
// and end are noted.
func (f *screenFilter) csiByte(dst []byte, b byte) []byte {
	switch {
	case b == 0x18 || b == 0x1a: // CAN, SUB abort the sequence
		f.st = fText
		dst = append(dst, f.seq...)
		dst = append(dst, b)
	case b == 0x1b: // a new escape aborts this one
		dst = append(dst, f.seq...)
		f.st = fEsc
	case b >= 0x40 && b <= 0x7e:
		f.seq = append(f.seq, b)
		f.st = fText
		if keepCSI(f.seq[2:]) {
			dst = append(dst, f.seq...)
		} else if s := string(f.seq[2:]); s == "?2026h" {
			if !f.inSync {
				f.inSync, f.syncMark = true, len(dst)
				f.syncStarts++
			}
		} else if s == "?2026l" {
			f.inSync = false
		}
	default:
		f.seq = append(f.seq, b)
		if len(f.seq) >= maxCSI {
			dst = append(dst, f.seq...)
			f.st = fText
		}
	}
	return dst
}

// reset forgets a sequence in progress (the stream was cut).
func (f *screenFilter) reset() { f.st = fText; f.seq = f.seq[:0]; f.inSync = false }

// keepCSI reports whether a CSI sequence (its bytes after "ESC [", final
// byte included) reaches the screen.
func keepCSI(s []byte) bool {
	final := s[len(s)-1]
	body := s[:len(s)-1]
	var priv byte
	if len(body) > 0 && body[0] >= '<' && body[0] <= '?' {
		priv = body[0]
		body = body[1:]
	}
	for _, b := range body {
		if b >= 0x20 && b <= 0x2f { // intermediate bytes
			return priv == 0 && final == 'p' && string(body) == "!" // DECSTR
		}
	}
	switch priv {
	case '<', '=', '>':
		return false
	case '?':
		switch final {
		case 'u', 'c', 'n':
			return false
		case 'h', 'l':
			return !hasParam(body, "2026")
		}
		return true
	}
	switch final {
	case 'c', 'n': // DA1, DSR: answered aside, nothing to draw
		return false
	}
	return true
}

// hasParam reports whether the ;-separated params contain p.
func hasParam(params []byte, p string) bool {
	for len(params) > 0 {
		i := 0
		for i < len(params) && params[i] != ';' {
			i++
		}
		if string(params[:i]) == p {
			return true
		}
		if i == len(params) {
			break
		}
		params = params[i+1:]
	}
	return false
}
