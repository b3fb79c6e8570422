package taskrun

import (
	"strings"
	"testing"
)

func TestExcerptCollapsesBlankRuns(t *testing.T) {
	screen := "\n\ntitle\n\nreply: one\nreply: two\n\n\n\n\n╭──╮\n│ >\n╰──╯\n  ? for shortcuts\n"
	got := Excerpt(screen, 6)
	want := "reply: one\nreply: two\n\n╭──╮\n│ >\n╰──╯\n  ? for shortcuts"
	if got != strings.Join(strings.Split(want, "\n")[len(strings.Split(want, "\n"))-6:], "\n") {
		t.Errorf("excerpt:\n%s", got)
	}
	if Excerpt("", 5) != "" {
		t.Error("excerpt of an empty screen")
	}
}

func TestStateKinds(t *testing.T) {
	for name, kind := range map[string]string{
		"":                       "",
		"interaction_idle":       "idle",
		"interaction_permission": "prompt",
		"working":                "working",
		"thinking":               "working",
	} {
		if got := stateKind(name); got != kind {
			t.Errorf("stateKind(%q) = %q, want %q", name, got, kind)
		}
	}
}
