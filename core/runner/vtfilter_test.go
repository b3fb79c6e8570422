package runner

import (
	"strings"
	"testing"
	"time"
)

func TestScreenFilterDropsQueriesKeepsDrawing(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"a\x1b[?ub", "ab"},                // kitty keyboard query
		{"a\x1b[>1ub\x1b[<u", "ab"},        // kitty push / pop
		{"a\x1b[=5;1ub", "ab"},             // kitty set
		{"a\x1b[>0qb", "ab"},               // XTVERSION
		{"a\x1b[cb\x1b[0c", "ab"},          // DA1
		{"a\x1b[>cb", "ab"},                // DA2
		{"a\x1b[6nb\x1b[5n", "ab"},         // DSR
		{"a\x1b[?2026hb\x1b[?2026l", "ab"}, // synchronized output
		{"a\x1b[?2026;25lb", "ab"},         // with another mode: the whole set goes (rare)
		{"a\x1b[?2026$pb", "ab"},           // DECRQM
		{"a\x1b[2 qb", "ab"},               // cursor style
		{"a\x1b]7501;?\x07b", "ab"},        // OSC query, BEL-terminated
		{"a\x1b]11;?\x1b\\b", "ab"},        // OSC colour query, ST-terminated
		{"a\x1b]0;title\x07b", "ab"},       // title
		{"a\x1b]8;;http://x\x1b\\b", "ab"}, // hyperlink
		{"a\x1bP+q544e\x1b\\b", "ab"},      // XTGETTCAP
		{"a\x1b_Gi=1;AAAA\x1b\\b", "ab"},   // kitty graphics (APC)
		{"a\x1b[>4;1mb", "ab"},             // modifyOtherKeys, not SGR
		{"\x1b[1;31ma\x1b[0m", "\x1b[1;31ma\x1b[0m"},
		{"\x1b[?25l\x1b[?1049h\x1b[2J\x1b[H", "\x1b[?25l\x1b[?1049h\x1b[2J\x1b[H"},
		{"\x1b7\x1b[5;5Hx\x1b8", "\x1b7\x1b[5;5Hx\x1b8"},
		{"\x1b[s\x1b[u", "\x1b[s\x1b[u"}, // ANSI.SYS save/restore is drawing
		{"\x1b(B\x1b)0x", "\x1b(B\x1b)0x"},
		{"\x1b[!p", "\x1b[!p"},
		{"é❯ ok\r\n", "é❯ ok\r\n"},
		{"a\x1b\x1b[2Kb", "a\x1b\x1b[2Kb"},
	}
	for _, c := range cases {
		var f screenFilter
		if got := string(f.apply(nil, []byte(c.in))); got != c.want {
			t.Errorf("filter(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A sequence split across two reads is filtered as if it came in one.
func TestScreenFilterAcrossReads(t *testing.T) {
	t.Parallel()
	stream := "\x1b7top\x1b[?u\x1b[>0q\x1b[c\x1b]7501;?\x07\x1b[?2026h\x1b[3;1H❯ Yes\x1b[?2026l\x1b]0;t\x1b\\\x1b[1;31mred\x1b[0m\x1b[>1u\r\n"
	var whole screenFilter
	want := string(whole.apply(nil, []byte(stream)))
	for cut := 0; cut <= len(stream); cut++ {
		for cut2 := cut; cut2 <= len(stream); cut2 += 3 {
			var f screenFilter
			out := f.apply(nil, []byte(stream[:cut]))
			out = f.apply(out, []byte(stream[cut:cut2]))
			out = f.apply(out, []byte(stream[cut2:]))
			if string(out) != want {
				t.Fatalf("cut at %d,%d: %q, want %q", cut, cut2, out, want)
			}
		}
	}
}

// The bug Claude Code 2.1.331 showed: it saves the cursor (ESC 7) at the
// top, queries the kitty keyboard protocol (CSI ? u), then redraws the rows
// below. vt10x alone restores the cursor and draws over the top rows.
func TestKittyQueryDoesNotMoveTheCursor(t *testing.T) {
	t.Parallel()
	raw := "\x1b7title\r\n\r\n\x1b[?u\x1b[c\x1b]7501;?\x07❯ No, exit\r\n  Yes\r\n" +
		"\x1b[2A\r\x1b[2K  No, exit\r\n\x1b[2K❯ Yes\r\n"
	got := RenderScreen([]byte(raw), 40, 6)
	want := "title\n\n  No, exit\n❯ Yes\n"
	if got != want {
		t.Errorf("screen %q, want %q", got, want)
	}
}

func BenchmarkScreenFilter(b *testing.B) {
	chunk := []byte(strings.Repeat("\x1b[32m00001234\x1b[0m \x1b[1mINFO\x1b[0m compiled \x1b[36mpkg/7\x1b[0m in 3ms\r\n", 700))
	var f screenFilter
	var out []byte
	b.SetBytes(int64(len(chunk)))
	for i := 0; i < b.N; i++ {
		out = f.apply(out[:0], chunk)
	}
}

// waitFor polls cond until it holds (or fails the test after 20 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A synchronized update (CSI ? 2026 h ... l) is shown whole or not at all,
// as a terminal shows it: a state check in the middle of one sees the
// frame before it.
func TestSynchronizedUpdateIsShownWhole(t *testing.T) {
	t.Parallel()
	script := `stty -echo; printf 'old frame\r\n'; read a; printf '\033[?2026h\033[H\033[2Jnew'; read b; printf ' frame\033[?2026l'; read c`
	term, err := StartTerminal(Spec{Command: "sh", Args: []string{"-c", script}, Cols: 40, Rows: 5}, TerminalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Stop(time.Second)
	waitFor(t, "the old frame", func() bool { return strings.Contains(term.Screen(), "old frame") })
	before := term.LastOutput()
	_ = term.Send("\r")
	waitFor(t, "the update's first half", func() bool { return term.LastOutput().After(before) })
	if s := term.Screen(); !strings.Contains(s, "old frame") || strings.Contains(s, "new") {
		t.Errorf("mid-update screen %q: want the old frame whole", s)
	}
	_ = term.Send("\r")
	waitFor(t, "the new frame", func() bool { return strings.Contains(term.Screen(), "new frame") })
	if s := term.Screen(); strings.Contains(s, "old") {
		t.Errorf("screen %q after the update", s)
	}
}

// An update that never ends is shown as it is after syncHold, as a
// terminal gives up on it.
func TestSynchronizedUpdateLeftOpenIsShownLater(t *testing.T) {
	t.Parallel()
	script := `stty -echo; printf 'old\r\n'; read a; printf '\033[?2026h\033[H\033[2Jstuck'; read b`
	term, err := StartTerminal(Spec{Command: "sh", Args: []string{"-c", script}, Cols: 40, Rows: 5}, TerminalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Stop(time.Second)
	waitFor(t, "the old frame", func() bool { return strings.Contains(term.Screen(), "old") })
	sent := time.Now()
	_ = term.Send("\r")
	waitFor(t, "the unfinished update", func() bool { return strings.Contains(term.Screen(), "stuck") })
	if d := time.Since(sent); d < syncHold-100*time.Millisecond {
		t.Errorf("the unfinished update was shown after %s, before syncHold (%s)", d, syncHold)
	}
}
