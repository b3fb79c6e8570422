package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
)

// vterm runs the vibeteam binary in a PTY of a given size, as a person at
// a terminal of that size would, and renders all it writes with a virtual
// terminal of the same size: tests look at the screen the person sees.
type vterm struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptm  *os.File
	vt   vt10x.Terminal
	cols int
	rows int

	mu      sync.Mutex
	raw     bytes.Buffer // every byte written, for what a screen cannot show (a bell)
	changed chan struct{}

	readDone chan struct{} // the PTY is closed on the other side
	exited   chan struct{}
	code     int
}

func startVTerm(t *testing.T, p *project, cols, rows int, args ...string) *vterm {
	t.Helper()
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptm, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		t.Fatal(err)
	}
	v := &vterm{t: t, ptm: ptm, cols: cols, rows: rows, vt: vt10x.New(vt10x.WithSize(cols, rows)),
		changed: make(chan struct{}, 1), readDone: make(chan struct{}), exited: make(chan struct{})}
	v.cmd = p.command(args...)
	v.cmd.Stdin, v.cmd.Stdout, v.cmd.Stderr = tty, tty, tty
	// Its own session with the PTY as controlling terminal: /dev/tty is
	// the PTY, and a resize sends it SIGWINCH.
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go v.read()
	go func() {
		v.code = exitCode(v.cmd.Wait())
		close(v.exited)
	}()
	t.Cleanup(func() {
		_ = v.cmd.Process.Kill()
		<-v.exited
		_ = ptm.Close()
	})
	return v
}

// read feeds the virtual terminal. vt10x drops a rune split across two
// writes, so a read's incomplete last rune waits for the next read.
func (v *vterm) read() {
	defer close(v.readDone)
	buf := make([]byte, 32<<10)
	var pending []byte
	for {
		n, err := v.ptm.Read(buf)
		pending = append(pending, buf[:n]...)
		cut := len(pending)
		for i := len(pending) - 1; i >= 0 && i >= len(pending)-utf8.UTFMax; i-- {
			if utf8.RuneStart(pending[i]) {
				if !utf8.FullRune(pending[i:]) {
					cut = i
				}
				break
			}
		}
		if cut > 0 {
			v.mu.Lock()
			v.raw.Write(pending[:cut])
			_, _ = v.vt.Write(pending[:cut])
			v.mu.Unlock()
			pending = append(pending[:0], pending[cut:]...)
			select {
			case v.changed <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// screen is the rendered screen, one string per row, right-trimmed.
func (v *vterm) screen() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	rows := strings.Split(strings.TrimSuffix(v.vt.String(), "\n"), "\n")
	for i, r := range rows {
		rows[i] = strings.TrimRight(r, " \x00")
	}
	return rows
}

// lastColumnUsed reports the rows whose last cell holds a character: a row
// that wrapped fills it.
func (v *vterm) lastColumnUsed() []int {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.vt.Lock()
	defer v.vt.Unlock()
	var out []int
	for y := 0; y < v.rows; y++ {
		if c := v.vt.Cell(v.cols-1, y).Char; c != ' ' && c != 0 {
			out = append(out, y)
		}
	}
	return out
}

func (v *vterm) rawOutput() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.raw.String()
}

func (v *vterm) dump() string {
	return strings.Join(v.screen(), "\n")
}

// rawStart is the first n bytes written, quoted: what a screen went
// through to end up as it is.
func (v *vterm) rawStart(n int) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	b := v.raw.Bytes()
	if len(b) > n {
		b = b[:n]
	}
	return strconv.Quote(string(b))
}

// waitFor waits, with a deadline, until cond holds for the screen, and
// returns that screen: a later look may catch a redraw half read.
func (v *vterm) waitFor(what string, cond func(screen []string) bool) []string {
	v.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if s := v.screen(); cond(s) {
			return s
		}
		select {
		case <-v.changed:
		case <-v.readDone:
			if s := v.screen(); cond(s) {
				return s
			}
			v.t.Fatalf("vibeteam ended before %s\nscreen:\n%s", what, v.dump())
		case <-deadline:
			v.t.Fatalf("no %s within 30s\nscreen:\n%s\nlast bytes: %s", what, v.dump(), v.rawStart(4000))
		}
	}
}

// waitText waits until the screen shows s.
func (v *vterm) waitText(s string) {
	v.t.Helper()
	v.waitFor(s, func(rows []string) bool { return strings.Contains(strings.Join(rows, "\n"), s) })
}

func (v *vterm) send(s string) {
	v.t.Helper()
	if _, err := v.ptm.WriteString(s); err != nil {
		v.t.Fatal(err)
	}
}

// resize changes the size of the PTY (vibeteam gets SIGWINCH), then of the
// virtual terminal. In this order, what vibeteam draws for the new size is
// never shown at the old one; what it drew for the old size may be shown at
// the new one, wrapped, as a terminal shows it after a resize.
func (v *vterm) resize(cols, rows int) {
	v.t.Helper()
	if err := pty.Setsize(v.ptm, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		v.t.Fatal(err)
	}
	v.mu.Lock()
	v.vt.Resize(cols, rows)
	v.cols, v.rows = cols, rows
	v.mu.Unlock()
}

// wait waits for vibeteam to exit and for all it wrote to be on screen.
func (v *vterm) wait() int {
	v.t.Helper()
	select {
	case <-v.exited:
	case <-time.After(60 * time.Second):
		v.t.Fatalf("vibeteam did not finish\nscreen:\n%s", v.dump())
	}
	select {
	case <-v.readDone:
	case <-time.After(30 * time.Second):
		v.t.Fatalf("the terminal stayed open after vibeteam exited\nscreen:\n%s", v.dump())
	}
	return v.code
}

// rowsWith returns the indexes of the rows that contain s.
func rowsWith(screen []string, s string) []int {
	var out []int
	for i, r := range screen {
		if strings.Contains(r, s) {
			out = append(out, i)
		}
	}
	return out
}
