package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
	"github.com/vibeteam/vibeteam/core/state"
)

// Safe makes text that comes from outside vibeteam — workflow files,
// session files, agents — harmless to print: every non-printable rune is
// shown escaped as Go quotes it (ESC as \x1b, BEL as \a, a right-to-left
// override as \u202e), and so is each byte of invalid UTF-8. Printable
// unicode is kept. Otherwise a task name could retitle or clear the
// person's terminal, or hide text from them.
func Safe[S ~string](text S) string {
	s := string(text)
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// SafeLine is Safe for one line of an agent's output or screen: tabs, which
// are common there (`go test`) and harmless, are expanded rather than
// shown as \t.
func SafeLine(s string) string {
	if !strings.Contains(s, "\t") {
		return Safe(s)
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col += runewidth.RuneWidth(r)
	}
	return Safe(b.String())
}

// Fit cuts printable text to at most w columns, marking the cut with "…".
func Fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return runewidth.Truncate(s, w, "…")
}

// Fill fits s to exactly w columns.
func Fill(s string, w int) string {
	return runewidth.FillRight(Fit(s, w), w)
}

// Pad pads s with spaces to at least w columns.
func Pad(s string, w int) string {
	return runewidth.FillRight(s, w)
}

// Count is a token count, short: 950, 12.3k, 1.2M.
func Count(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + "k"
	case n >= 1_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// Cost is ", $0.0123" when the CLI reported a cost.
func Cost(usd float64) string {
	if usd <= 0 {
		return ""
	}
	return fmt.Sprintf(", $%.4f", usd)
}

// Spend is tokens and cost, short.
func Spend(tokens int64, usd float64) string {
	return Count(tokens) + " tok" + Cost(usd)
}

// BeadElapsed is how long a bead ran (runs).
func BeadElapsed(b *state.BacklogBead, now time.Time) string {
	if b.StartedAt == nil {
		return ""
	}
	end := now
	if b.EndedAt != nil {
		end = *b.EndedAt
	}
	d := end.Sub(*b.StartedAt)
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// LimitLine says a limit on one line: "claude usage limit, resets
// 2026-11-25 17:00 UTC (in 1h32m)".
func LimitLine(l *state.Limit, now time.Time) string {
	s := Safe(l.Adapter) + " usage limit"
	if l.ResetAt == nil {
		return s + ", reset time not given"
	}
	s += ", resets " + l.ResetAt.Local().Format("2006-01-02 15:04 MST")
	if in := l.ResetAt.Sub(now); in > 0 {
		s += " (in " + in.Round(time.Second).String() + ")"
	} else {
		s += " (passed)"
	}
	return s
}
