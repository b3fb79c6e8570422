// Command faketui is a small full-screen TUI for tests of the PTY runner. It
// redraws in place, asks its terminal for the cursor position at start (as
// codex does), and then loops:
//
//   - idle: an input box at the bottom ("│ > " and "? for shortcuts");
//   - a submitted line starts a turn: the box disappears, a spinner redraws
//     every 30 ms for -work, then "reply: <line>" is printed;
//   - a line containing "ask" shows a y/n question during the turn;
//     a line containing "menu" shows a numbered menu (digit or Enter answers).
//
// Flags: -menu-first shows the menu before the first idle (a trust dialog),
// -record FILE appends every submitted line and answer, -work DUR sets the
// turn length, -exit-after N exits after N turns, -react DUR delays the
// redraw after an answer (a slow machine), -menu-twice shows the first menu
// again after it has gone, -splash DUR shows an idle-looking start-up
// screen before the first turn, -unnumbered draws its menus as Claude Code
// 2.1.331 does: no numbers, "No" first and selected, digits ignored, the
// selection redrawn in place relative to the cursor after a kitty keyboard
// query (CSI ? u) that vt10x alone runs as restore-cursor. A positional argument is
// submitted as the first turn by the program itself.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

var (
	menuFirst  = flag.Bool("menu-first", false, "show a menu before the first idle")
	record     = flag.String("record", "", "append what was received to this file")
	work       = flag.Duration("work", 400*time.Millisecond, "length of a turn")
	exitAfter  = flag.Int("exit-after", 0, "exit after this many turns (0: never)")
	pidfile    = flag.String("pidfile", "", "write the pid to this file")
	react      = flag.Duration("react", 0, "wait this long after an answer before redrawing (a slow machine)")
	splash     = flag.Duration("splash", 0, "show an idle-looking start-up screen this long before the first turn")
	menuTwice  = flag.Bool("menu-twice", false, "with -menu-first: after a pause, show the same menu again")
	unnumbered = flag.Bool("unnumbered", false, "menus as Claude Code 2.1.331: unnumbered, No selected first")
	version    = flag.Bool("version", false, "print the version and exit")
	blank      = flag.Duration("blank", 0, "draw nothing this long after start-up (a slow first frame)")
	late       = flag.Duration("late", 0, "show a submitted line in the transcript, over the idle box, this long before its turn starts")
)

var (
	out     = bufio.NewWriter(os.Stdout)
	history []string
	keys    = make(chan byte, 1024)
)

func main() {
	flag.Parse()
	if *version {
		fmt.Println("faketui 1.2.3")
		return
	}
	if *pidfile != "" {
		_ = os.WriteFile(*pidfile, []byte(fmt.Sprint(os.Getpid())), 0o644)
	}
	if old, err := term.MakeRaw(0); err == nil {
		defer term.Restore(0, old)
	}
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := os.Stdin.Read(buf)
			for _, b := range buf[:n] {
				keys <- b
			}
			if err != nil {
				close(keys)
				return
			}
		}
	}()
	// Like Claude Code: save the cursor at the top-left corner.
	out.WriteString("\x1b7")
	// Like codex: ask where the cursor is and wait for the answer.
	out.WriteString("\x1b[6n")
	out.Flush()
	if !awaitCursorReply(2 * time.Second) {
		fmt.Println("no cursor position reply")
		os.Exit(4)
	}
	if *blank > 0 {
		// Like opencode on a loaded machine: a cleared screen, and nothing
		// drawn for a while.
		out.WriteString("\x1b[2J\x1b[H")
		out.Flush()
		time.Sleep(*blank)
	}
	if *menuFirst {
		answer := menu("Do you trust the files in this folder?")
		rec("menu:" + answer)
		if answer != "1" {
			draw([]string{"not trusted, bye"}, "")
			os.Exit(5)
		}
		if *menuTwice {
			// Gone, then drawn again: a new appearance of the same question.
			spin(*work)
			answer = menu("Do you trust the files in this folder?")
			rec("menu:" + answer)
		}
	}
	if *splash > 0 {
		// Like codex's start-up screen: it looks idle, takes no input, and
		// the positional prompt has not been submitted yet.
		draw([]string{"starting…"}, fmt.Sprintf(idleBox, ""))
		time.Sleep(*splash)
	}
	turns := 0
	if args := flag.Args(); len(args) > 0 {
		turn(strings.Join(args, " "))
		turns++
	}
	for *exitAfter == 0 || turns < *exitAfter {
		line, ok := readLine()
		if !ok {
			return
		}
		turn(line)
		turns++
	}
	draw(append(history, "bye"), "")
}

func awaitCursorReply(timeout time.Duration) bool {
	deadline := time.After(timeout)
	var got []byte
	for {
		select {
		case b, ok := <-keys:
			if !ok {
				return false
			}
			got = append(got, b)
			if b == 'R' && strings.HasPrefix(string(got), "\x1b[") {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func rec(s string) {
	if *record == "" {
		return
	}
	f, err := os.OpenFile(*record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		fmt.Fprintln(f, s)
		f.Close()
	}
}

// draw clears the screen and paints the history, a status area, and the
// bottom box. Written in small pieces, as real TUIs' writes arrive split.
func draw(lines []string, bottom string) {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J\x1b[1mfaketui\x1b[0m v1\r\n\r\n")
	start := 0
	if len(lines) > 25 {
		start = len(lines) - 25
	}
	for _, l := range lines[start:] {
		b.WriteString(l + "\r\n")
	}
	if bottom != "" {
		b.WriteString("\x1b[36;1H" + bottom)
	}
	s := b.String()
	for len(s) > 0 {
		n := 7
		if n > len(s) {
			n = len(s)
		}
		out.WriteString(s[:n])
		out.Flush()
		s = s[n:]
	}
}

const idleBox = "╭──────────────────────────────╮\r\n│ > %s\x1b[K\r\n╰──────────────────────────────╯\r\n  ? for shortcuts"

func readLine() (string, bool) {
	var line []byte
	draw(history, fmt.Sprintf(idleBox, ""))
	for {
		b, ok := <-keys
		if !ok {
			return "", false
		}
		switch b {
		case '\r', '\n':
			return string(line), true
		case 0x7f:
			if len(line) > 0 {
				line = line[:len(line)-1]
			}
		case 0x1b:
			// ignore escape sequences
		default:
			line = append(line, b)
		}
		draw(history, fmt.Sprintf(idleBox, string(line)))
	}
}

func turn(line string) {
	rec("line:" + line)
	history = append(history, "> "+line)
	if *late > 0 {
		// Like opencode on a loaded machine: the message is shown, the
		// screen looks idle, and the turn starts seconds later.
		draw(history, fmt.Sprintf(idleBox, ""))
		time.Sleep(*late)
	}
	if strings.Contains(line, "ask") {
		spin(*work / 2)
		a := question("Apply the change? (y/n)")
		rec("answer:" + a)
		history = append(history, "answered "+a)
	}
	if strings.Contains(line, "menu") {
		spin(*work / 2)
		a := menu("Allow this command?")
		rec("menu:" + a)
		history = append(history, "chose "+a)
	}
	spin(*work)
	history = append(history, "reply: "+line)
}

var frames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func spin(d time.Duration) {
	end := time.Now().Add(d)
	draw(history, "")
	for i := 0; time.Now().Before(end); i++ {
		out.WriteString(fmt.Sprintf("\x1b[30;1H\x1b[2K%s Working… (esc to interrupt)", frames[i%len(frames)]))
		out.Flush()
		time.Sleep(30 * time.Millisecond)
	}
	out.WriteString("\x1b[30;1H\x1b[2K")
	out.Flush()
}

func question(q string) string {
	draw(history, q+" ")
	for b := range keys {
		if b == 'y' || b == 'n' {
			time.Sleep(*react)
			return string(b)
		}
	}
	return ""
}

// menu shows a two-option menu and returns "1" for yes, "2" for no.
func menu(q string) string {
	if *unnumbered {
		return unnumberedMenu(q)
	}
	sel := 1
	for {
		opts := []string{"1. Yes", "2. No"}
		for i := range opts {
			if i+1 == sel {
				opts[i] = "❯ " + opts[i]
			} else {
				opts[i] = "  " + opts[i]
			}
		}
		draw(history, q+"\r\n"+strings.Join(opts, "\r\n")+"\r\nEnter to confirm · Esc to cancel")
		b, ok := <-keys
		if !ok {
			return ""
		}
		switch {
		case b == '1' || b == '2':
			time.Sleep(*react)
			return string(b)
		case b == '\r':
			time.Sleep(*react)
			return fmt.Sprint(sel)
		case b == 'A':
			sel = 1
		case b == 'B':
			sel = 2
		}
	}
}

// unnumberedMenu is Claude Code 2.1.331's trust menu: "No" first and
// selected, no numbers (digits do nothing), arrows move, Enter confirms.
// After the first full draw it asks for the kitty keyboard flags (a real
// terminal leaves the cursor where it is), then redraws only the two
// option rows, moving up from where the cursor is.
func unnumberedMenu(q string) string {
	labels := []string{"No, exit", "Yes, I trust this folder"}
	sel := 0
	row := func(i int) string {
		if i == sel {
			return "\x1b[2K ❯ " + labels[i]
		}
		return "\x1b[2K   " + labels[i]
	}
	draw(history, q+"\r\n"+row(0)+"\r\n"+row(1)+"\r\n Enter to confirm · Esc to cancel")
	out.WriteString("\x1b[?u\x1b[c")
	out.Flush()
	for {
		b, ok := <-keys
		if !ok {
			return ""
		}
		switch b {
		case '\r':
			time.Sleep(*react)
			if sel == 1 {
				return "1"
			}
			return "2"
		case 'A':
			sel = 0
		case 'B':
			sel = 1
		default:
			continue
		}
		// The cursor is at the end of the footer: two rows up is the first
		// option.
		out.WriteString("\x1b[2A\r" + row(0) + "\r\n" + row(1) + "\r\n\x1b[999C")
		out.Flush()
	}
}
