package runner

import (
	"strings"
	"testing"
)

func TestStripperRemovesSequences(t *testing.T) {
	cases := map[string]string{
		"\x1b[1;32mgreen\x1b[0m line\n":       "green line\n",
		"a\r\nb\n":                            "a\nb\n",
		"50%\r100%\n":                         "50%\n100%\n",
		"\x1b]0;title\x07text":                "text",
		"\x1b]11;?\x1b\\x":                    "x",
		"\x1b(Bplain\x1b[?25l\x1b[2J":         "plain",
		"tab\there\x07bell":                   "tab\therebell",
		"❯ unicode ✻ Churned":                 "❯ unicode ✻ Churned",
		"\x1b[38;2;255;0;0mrgb\x1b[m\x1b[K\n": "rgb\n",
		"Quick\x1b[1Csafety\x1b[3Ccheck":      "Quick safety   check",
		"a\x1b[Cb\x1b[12Gc":                   "a b c",
	}
	for in, want := range cases {
		if got := StripString(in); got != want {
			t.Errorf("Strip(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStripperAcrossChunkBoundaries(t *testing.T) {
	in := "\x1b[1;32mgreen\x1b[0m and \x1b]0;t\x07more\r\nend\n"
	want := StripString(in)
	for split := 0; split <= len(in); split++ {
		var s Stripper
		got := s.Strip(nil, []byte(in[:split]))
		got = s.Strip(got, []byte(in[split:]))
		if string(got) != want {
			t.Fatalf("split at %d: %q, want %q", split, got, want)
		}
	}
}

func BenchmarkStripper(b *testing.B) {
	line := "\x1b[32m2026-11-21\x1b[0m \x1b[1mINFO\x1b[0m compiled package \x1b[36mcore/runner\x1b[0m in 12ms\r\n"
	chunk := []byte(strings.Repeat(line, 32*1024/len(line)))
	var s Stripper
	dst := make([]byte, 0, len(chunk))
	b.SetBytes(int64(len(chunk)))
	for i := 0; i < b.N; i++ {
		dst = s.Strip(dst[:0], chunk)
	}
}
