package excerpt

import (
	"slices"
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
