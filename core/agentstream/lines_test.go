package agentstream

import (
	"strings"
	"testing"
)

func TestLinesAcrossChunks(t *testing.T) {
	t.Parallel()
	var l Lines
	var got []string
	collect := func(b []byte) { got = append(got, string(b)) }
	for _, chunk := range []string{`{"a":`, "1}\n{\"b\"", ":2}\r\n\n", "tail"} {
		l.Write([]byte(chunk), collect)
	}
	l.Flush(collect)
	want := []string{`{"a":1}`, `{"b":2}`, "", "tail"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLinesDropsAnOverlongLine(t *testing.T) {
	t.Parallel()
	var l Lines
	var got []string
	collect := func(b []byte) { got = append(got, string(b)) }
	big := strings.Repeat("x", maxLine/2+1)
	l.Write([]byte(big), collect)
	l.Write([]byte(big), collect)
	l.Write([]byte("still the long line\nnext\n"), collect)
	if len(got) != 1 || got[0] != "next" {
		t.Errorf("got %d lines, first %.20q", len(got), got)
	}
}
