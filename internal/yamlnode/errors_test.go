package yamlnode

import (
	"errors"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLineCounter(t *testing.T) {
	data := []byte("ab\r\ncd\ré\tf\n\xffg")
	want := map[int][2]int{
		0: {1, 1}, 1: {1, 2}, 2: {1, 3}, 3: {1, 4}, 4: {2, 1}, 6: {2, 3}, 7: {3, 1},
		9: {3, 2}, 10: {3, 3}, 11: {3, 4}, 12: {4, 1}, 13: {4, 2}, 14: {4, 3},
		8: {3, 1}, // inside "é": its first column
	}
	lc := NewLineCounter(data)
	// Forwards, then backwards, then out of range.
	for _, off := range []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 9, 0, 14} {
		if l, c := lc.Pos(off); [2]int{l, c} != want[off] {
			t.Errorf("pos(%d) = %d:%d, want %d:%d", off, l, c, want[off][0], want[off][1])
		}
	}
	if l, c := lc.Pos(99); l != 4 || c != 3 {
		t.Errorf("pos(99) = %d:%d, want the end, 4:3", l, c)
	}
	if l, c := NewLineCounter([]byte("\ufeffab")).Pos(4); l != 1 || c != 2 {
		t.Errorf("after a byte order mark: %d:%d, want 1:2", l, c)
	}
}

func TestSyntaxError(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"scanner error", "a: b\n  c: d\n", "f.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		// yaml.v3 puts parser errors a line early: this one is on line 2.
		{"parser error", "a: {b: c\n", "f.yaml:2: invalid YAML: did not find expected ',' or '}'"},
		{"undefined alias", "# not *nope\na: [*nope]\n", "f.yaml:2:5: invalid YAML: unknown anchor 'nope' referenced"},
		{"bad byte", "a: b\nc: \xff\n", "f.yaml:2:4: invalid YAML: invalid leading UTF-8 octet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n yaml.Node
			err := SafeUnmarshal([]byte(c.src), &n)
			if err == nil {
				t.Fatal("no error")
			}
			if got := SyntaxError(err, "f.yaml", []byte(c.src)).Error(); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{Pos: Pos{File: "f", Line: 1, Col: 2}, Field: "a.b", Msg: "m"}, "f:1:2: a.b: m"},
		{Error{Pos: Pos{File: "f", Line: 3}, Msg: "m"}, "f:3: m"},
		{Error{Pos: Pos{File: "f"}, Msg: "m"}, "f: m"},
		{Error{Msg: "m"}, "m"},
		{Error{Pos: Pos{File: "f", Line: 1, Col: 2}, Field: "x", Msg: "m", Warning: true}, "f:1:2: warning: x: m"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
		if got := c.e.String(); got != c.want {
			t.Errorf("String() = %q, want the Error() %q", got, c.want)
		}
	}
}

func TestErrorList(t *testing.T) {
	var empty ErrorList
	if empty.Err() != nil {
		t.Error("an empty ErrorList must be a nil error")
	}
	at := func(file string, line, col int, msg string) *Error {
		return &Error{Pos: Pos{File: file, Line: line, Col: col}, Msg: msg}
	}
	l := ErrorList{at("b", 1, 1, "x"), at("a", 2, 1, "y"), at("a", 1, 5, "z"), at("a", 1, 5, "z"),
		at("b", 1, 1, "x2"), at("a", 0, 0, "nowhere"), at("a", 0, 0, "nowhere")}
	l.Sort()
	l = l.Dedupe()
	want := "a: nowhere\na: nowhere\na:1:5: z\na:2:1: y\nb:1:1: x\nb:1:1: x2"
	if got := l.Error(); got != want {
		t.Errorf("sorted and deduplicated:\n%s\nwant:\n%s", got, want)
	}
	var e *Error
	if !errors.As(l.Err(), &e) || e.Msg != "nowhere" {
		t.Errorf("errors.As(*Error) = %v", e)
	}
	if l.HasErrors() != true || (ErrorList{{Msg: "w", Warning: true}}).HasErrors() {
		t.Error("HasErrors")
	}
}
