package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// detectState runs script in a PTY until a state matches and returns that
// detection.
func detectState(t *testing.T, script string, pattern string) Detection {
	t.Helper()
	found := make(chan Detection, 1)
	term, err := StartTerminal(Spec{Command: "sh", Args: []string{"-c", script}, Cols: 80, Rows: 24}, TerminalOptions{
		States: []StatePattern{{Name: "waiting", Pattern: regexp.MustCompile(pattern)}},
		OnState: func(d Detection) {
			if d.State != "" {
				select {
				case found <- d:
				default:
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Stop(time.Second)
	select {
	case d := <-found:
		return d
	case <-term.Done():
		t.Fatalf("ended unmatched; screen:\n%q", term.Screen())
	case <-time.After(60 * time.Second):
		t.Fatalf("never matched; screen:\n%q", term.Screen())
	}
	return Detection{}
}

func TestPromptWithTrailingSpaceMatches(t *testing.T) {
	t.Parallel()
	d := detectState(t, `echo "header   "; printf '> '; read x`, `(?m)^> $`)
	if d.Match != "> " || d.CursorRow != 1 || d.CursorCol != 2 {
		t.Errorf("match %q at cursor %d,%d; screen %q", d.Match, d.CursorRow, d.CursorCol, d.Screen)
	}
	if d.Screen != "header\n> \n" {
		t.Errorf("screen %q: rows away from the cursor stay right-trimmed", d.Screen)
	}
	if d.Newlines != 1 {
		t.Errorf("Newlines %d, want 1", d.Newlines)
	}
}

func TestQuestionWithTrailingSpaceMatches(t *testing.T) {
	t.Parallel()
	// (?m): the screen's text ends with a newline, and $ alone is the end
	// of the text in Go.
	d := detectState(t, `printf 'Proceed? (y/n) '; read x`, `(?m)Proceed\? \(y/n\) $`)
	if d.Match != "Proceed? (y/n) " || d.CursorCol != len("Proceed? (y/n) ") {
		t.Errorf("match %q at cursor %d,%d", d.Match, d.CursorRow, d.CursorCol)
	}
}

func TestRenderScreenKeepsTheCursorRow(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"> ":                             "> \n",
		"abc   \r\n> ":                   "abc\n> \n",
		"> \x1b[?25l":                    "> \n",      // hidden cursor: its position still counts
		"> typed   \x1b[4G":              "> typed\n", // text right of the cursor is kept, spaces trimmed
		"one\r\n  two  \x1b[1;1H":        "one\n  two\n",
		"Proceed? (y/n) ":                "Proceed? (y/n) \n",
		"a\r\n\r\n    ":                  "a\n\n    \n",
		"x\x1b[20C":                      "x" + strings.Repeat(" ", 20) + "\n",
		"x\x1b[200C":                     "x" + strings.Repeat(" ", 38) + "\n", // cursor stops at the last column
		"full" + strings.Repeat("-", 36): "full" + strings.Repeat("-", 36) + "\n",
	}
	for raw, want := range cases {
		if got := RenderScreen([]byte(raw), 40, 5); got != want {
			t.Errorf("RenderScreen(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Newlines counts what the child wrote, also past what the bounded backlog
// kept for the screen.
func TestNewlinesCountsDroppedOutput(t *testing.T) {
	t.Parallel()
	const n = 100000 // ~600 KB, ten times the backlog
	f := filepath.Join(t.TempDir(), "lines")
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString("line\n")
	}
	b.WriteString("last")
	if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	term, err := StartTerminal(Spec{Command: "cat", Args: []string{f}, Cols: 40, Rows: 5}, TerminalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, term)
	d, _ := term.Detect()
	if d.Newlines != n {
		t.Errorf("Newlines %d, want %d", d.Newlines, n)
	}
	if d.Screen != "line\nline\nline\nline\nlast\n" || d.CursorRow != 4 || d.CursorCol != 4 {
		t.Errorf("screen %q cursor %d,%d", d.Screen, d.CursorRow, d.CursorCol)
	}
}

// A child sees PWD as its own directory, not vibeteam's.
func TestChildPWDIsItsDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out strings.Builder
	var mu sync.Mutex
	p, err := StartHeadless(Spec{Command: "sh", Args: []string{"-c", `printf %s "$PWD"`}, Dir: dir}, func(c Chunk) {
		mu.Lock()
		out.Write(c.Raw)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	mu.Lock()
	defer mu.Unlock()
	if out.String() != dir {
		t.Errorf("PWD %q, want %q", out.String(), dir)
	}
}
