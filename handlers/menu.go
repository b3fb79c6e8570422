package handlers

import (
	"strings"
	"unicode"
)

// Selection markers agent TUIs draw in front of a menu's selected option
// (Claude Code ❯, Codex ›, Gemini CLI ●, others > ▸ ► →).
var markers = []string{"❯", "›", "●", ">", "▸", "►", "→"}

// Menu is where a menu option and the menu's selection are on a rendered
// screen (rows of the screen's lines, -1 when not found).
type Menu struct {
	Option   int // the row of the option whose label was asked for
	Selected int // the row of the selected option (the one with a marker)
	Options  int // how many rows carry the label (more than one: ambiguous)
}

// OnOption reports whether the selection is on the option.
func (m Menu) OnOption() bool { return m.Option >= 0 && m.Option == m.Selected }

// Key is the arrow key that moves the selection one option toward the
// option ("" when it is there, or either is missing).
func (m Menu) Key() string {
	switch {
	case m.Option < 0 || m.Selected < 0 || m.Option == m.Selected:
		return ""
	case m.Option > m.Selected:
		return "\x1b[B"
	}
	return "\x1b[A"
}

// menuSpan is how far (in rows) the selection may be from the option and
// still be taken as the same menu's.
const menuSpan = 12

// FindOption finds, on a rendered screen, the menu option labelled label
// and the menu's selected option. An option's label is its line's text
// without what a TUI draws around it: box edges, the selection marker, a
// number ("2. "), and a parenthetical after it ("Yes, proceed (y)" has the
// label "Yes, proceed"); it must equal label, case and spacing included
// but for runs of spaces, so "Yes" is never "Yes, and always allow". When
// several lines have the label, the lowest (the newest dialog) counts.
func FindOption(screen, label string) Menu {
	lines := strings.Split(screen, "\n")
	m := Menu{Option: -1, Selected: -1}
	want := strings.Join(strings.Fields(label), " ")
	for i, l := range lines {
		if text, _ := optionText(l); text != "" && sameLabel(text, want) {
			m.Option = i
			m.Options++
		}
	}
	if m.Option < 0 {
		return m
	}
	best := menuSpan + 1
	for i := max(0, m.Option-menuSpan); i < len(lines) && i <= m.Option+menuSpan; i++ {
		text, marked := optionText(lines[i])
		if !marked || text == "" {
			continue
		}
		if d := abs(i - m.Option); d < best {
			best, m.Selected = d, i
		}
	}
	return m
}

// sameLabel reports whether an option's text is the label, allowing a
// parenthetical after it.
func sameLabel(text, label string) bool {
	if text == label {
		return true
	}
	rest, ok := strings.CutPrefix(text, label)
	return ok && strings.HasPrefix(rest, " (") && strings.HasSuffix(rest, ")")
}

// optionText is a line's text as a menu option, and whether it carries the
// selection marker.
func optionText(line string) (string, bool) {
	s := strings.TrimFunc(line, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("│┃║|", r)
	})
	marked := false
	for _, m := range markers {
		if rest, ok := strings.CutPrefix(s, m); ok && (rest == "" || rest[0] == ' ') {
			s, marked = strings.TrimSpace(rest), true
			break
		}
	}
	// A number: "2. Yes" or "2) Yes".
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') && i+1 < len(s) && s[i+1] == ' ' {
		s = strings.TrimSpace(s[i+1:])
	}
	return strings.Join(strings.Fields(s), " "), marked
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
