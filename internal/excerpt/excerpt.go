// Package excerpt cuts text down to what a line, an event or a record has
// room for: its first line, its last lines (of a text, of a screen), all of
// it on one line, or a bounded piece cut on a rune or counted in runes. Each function is named for how it differs
// from the others, so a caller picks by what it needs to show.
package excerpt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// FirstLine is the first line of s that is not blank, as it is.
func FirstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// FirstLineMarked is the first line of s, trimmed, and " …" after it when
// more lines follow: a reader sees that there is more.
func FirstLineMarked(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

// ScreenEnd is the last n lines of a screen, runs of blank lines counted
// as one (TUIs pin their input box to the bottom, far from the text above).
func ScreenEnd(screen string, n int) string {
	var lines []string
	blank := true
	for _, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		isBlank := strings.TrimSpace(l) == ""
		if isBlank && blank {
			continue
		}
		blank = isBlank
		lines = append(lines, l)
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LastLines is the last n non-blank lines of s, after a line that says how
// many came before when there were more.
func LastLines(s string, n int) []string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) <= n {
		return lines
	}
	more := len(lines) - n
	return append([]string{fmt.Sprintf("… (%d line(s) before)", more)}, lines[more:]...)
}

// OneLine is s on one line (its runs of white space, newlines included,
// one space each), at most n bytes cut on a rune and marked "…"; n <= 0:
// no bound.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if n <= 0 {
		return s
	}
	return Head(s, n)
}

// Head is the start of s, at most n bytes cut on a rune, marked "…" when
// it was cut.
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + "…"
}

// Cut is the start of s, at most n bytes cut on a rune, unmarked: for a
// field with a bound of its own.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Runes is the first n characters (runes) of s, then mark when there were
// more: for text quoted in a message, where characters, not bytes, are
// what a reader counts.
func Runes(s string, n int, mark string) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + mark
	}
	return s
}

// Tail is the end of s, at most n bytes, starting on a rune.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:]
}
