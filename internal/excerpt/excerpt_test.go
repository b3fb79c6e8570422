package excerpt

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFirstLines(t *testing.T) {
	for _, c := range []struct{ in, first, marked string }{
		{"", "", ""},
		{"\n  \nhello  \nworld", "hello  ", "hello …"},
		{"  one line  ", "  one line  ", "one line"},
	} {
		if got := FirstLine(c.in); got != c.first {
			t.Errorf("FirstLine(%q) = %q, want %q", c.in, got, c.first)
		}
		if got := FirstLineMarked(c.in); got != c.marked {
			t.Errorf("FirstLineMarked(%q) = %q, want %q", c.in, got, c.marked)
		}
	}
}

func TestLastLines(t *testing.T) {
	if got := LastLines("a\n\nb\r\nc\nd\n", 2); !slices.Equal(got, []string{"… (2 line(s) before)", "c", "d"}) {
		t.Errorf("LastLines = %q", got)
	}
	if got := LastLines("a\nb", 5); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("LastLines = %q", got)
	}
}

// A cut never splits a rune: what is kept stays valid UTF-8.
func TestCutsOnARune(t *testing.T) {
	s := "héllo wörld ✓✓✓"
	for n := 0; n <= len(s)+1; n++ {
		for _, got := range []string{Head(s, n), Tail(s, n), OneLine(s, n)} {
			if !utf8.ValidString(got) {
				t.Errorf("n=%d: %q is not valid UTF-8", n, got)
			}
		}
		if n < len(s) && Head(s, n) == s {
			t.Errorf("Head(%d) did not cut", n)
		}
	}
	if got := OneLine("a\n  b\tc", 0); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
}

func TestScreenEndCollapsesBlankRuns(t *testing.T) {
	screen := "\n\ntitle\n\nreply: one\nreply: two\n\n\n\n\n╭──╮\n│ >\n╰──╯\n  ? for shortcuts\n"
	got := ScreenEnd(screen, 6)
	want := "reply: one\nreply: two\n\n╭──╮\n│ >\n╰──╯\n  ? for shortcuts"
	if got != strings.Join(strings.Split(want, "\n")[len(strings.Split(want, "\n"))-6:], "\n") {
		t.Errorf("excerpt:\n%s", got)
	}
	if ScreenEnd("", 5) != "" {
		t.Error("excerpt of an empty screen")
	}
}

func TestRunes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		mark string
		want string
	}{
		{"héllo wörld", 5, "…", "héllo…"},
		{"héllo", 5, "…", "héllo"},
		{"日本語のテキスト", 3, "...", "日本語..."},
		{"abc", 0, "", ""},
	} {
		if got := Runes(c.in, c.n, c.mark); got != c.want {
			t.Errorf("Runes(%q, %d, %q) = %q, want %q", c.in, c.n, c.mark, got, c.want)
		}
	}
	// Cut counts bytes and never splits a character: "é" is two.
	if got := Cut("héllo", 2); got != "h" || !utf8.ValidString(got) {
		t.Errorf("Cut = %q", got)
	}
	if got := Cut("héllo", 3); got != "hé" {
		t.Errorf("Cut = %q", got)
	}
}
