package handlers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// golden is a screen rendered from a recording of a real CLI (see
// core/runner/testdata/screens).
func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "core", "runner", "testdata", "screens", name+".golden"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func row(screen, text string) int {
	for i, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, text) {
			return i
		}
	}
	return -2
}

func TestFindOptionOnRecordedScreens(t *testing.T) {
	cases := []struct {
		screen, label string
		key           string // the arrow toward the option; "" when on it
		selected      string // text of the selected line
	}{
		{"claude-2.1.197-trust", "Yes, I trust this folder", "", "1. Yes, I trust this folder"},
		{"claude-2.1.332-trust", "Yes, I trust this folder", "\x1b[B", "No, exit"},
		{"claude-2.1.332-trust-yes", "Yes, I trust this folder", "", "Yes, I trust this folder"},
		{"claude-2.1.332-trust", "No, exit", "", "No, exit"},
		{"claude-2.1.197-apikey", "Yes", "\x1b[A", "2. No (recommended)"},
		{"claude-2.1.197-apikey", "No", "", "2. No (recommended)"}, // "(recommended)" is no part of the label
		{"claude-2.1.332-apikey", "Yes", "\x1b[A", "No (recommended)"},
		{"claude-2.1.332-apikey-yes", "Yes", "", "❯ Yes"},
	}
	for _, c := range cases {
		s := golden(t, c.screen)
		m := FindOption(s, c.label)
		if m.Option < 0 || m.Selected < 0 {
			t.Errorf("%s: %q: %+v: option or selection not found", c.screen, c.label, m)
			continue
		}
		if got := strings.Split(s, "\n")[m.Selected]; !strings.Contains(got, c.selected) {
			t.Errorf("%s: selected line %q, want one with %q", c.screen, got, c.selected)
		}
		if m.Key() != c.key || m.OnOption() != (c.key == "") {
			t.Errorf("%s: %q: key %q on %v, want %q", c.screen, c.label, m.Key(), m.OnOption(), c.key)
		}
		if m.Options != 1 {
			t.Errorf("%s: %q found on %d rows", c.screen, c.label, m.Options)
		}
	}
}

func TestFindOptionNeverGuesses(t *testing.T) {
	s := golden(t, "claude-2.1.332-trust")
	for _, label := range []string{"Yes", "Yes, I trust", "yes, i trust this folder", "Trust and continue"} {
		if m := FindOption(s, label); m.Option >= 0 || m.Key() != "" || m.OnOption() {
			t.Errorf("%q: found %+v on a screen without that option", label, m)
		}
	}
	// The label is there but no line carries a selection marker.
	plain := "Do you want to proceed?\n  1. Yes\n  2. No\n"
	if m := FindOption(plain, "Yes"); m.Option != 1 || m.Selected != -1 || m.Key() != "" || m.OnOption() {
		t.Errorf("no marker: %+v", m)
	}
}

func TestFindOptionShapes(t *testing.T) {
	cases := []struct{ screen, label, key string }{
		{"Would you like to run it?\n› 1. Yes, proceed (y)\n  2. No (esc)\n", "Yes, proceed", ""},
		{"Would you like to run it?\n› 1. Yes, proceed (y)\n  2. No, and tell Codex (esc)\n", "No, and tell Codex", "\x1b[B"},
		{"│ Allow execution of [Shell]? │\n│ ● 1. Allow once │\n│ 2. Allow for this session │\n", "Allow for this session", "\x1b[B"},
		{"Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to src/\n   3. No\n", "Yes", ""},
		{"Do you want to proceed?\n   1. Yes\n   2. Yes, and always allow access to src/\n ❯ 3. No\n", "Yes", "\x1b[A"},
	}
	for _, c := range cases {
		m := FindOption(c.screen, c.label)
		if m.Option < 0 || m.Selected < 0 || m.Key() != c.key {
			t.Errorf("%q in %q: %+v key %q, want key %q", c.label, c.screen, m, m.Key(), c.key)
		}
	}
}

func TestChooseHandler(t *testing.T) {
	f, err := Lookup("choose:Yes, I trust this folder")
	if err != nil {
		t.Fatal(err)
	}
	a := f(Context{})
	if a.Choose != "Yes, I trust this folder" || a.Keys != "" || a.Description == "" {
		t.Errorf("action %+v", a)
	}
	for _, bad := range []string{"choose", "choose:", "choose: Yes", "choose:a\nb"} {
		if _, err := Lookup(bad); err == nil {
			t.Errorf("Lookup(%q) accepted", bad)
		}
	}
}
