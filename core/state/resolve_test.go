package state

import (
	"errors"
	"strings"
	"testing"
)

func TestResolvePrefix(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir())
	for _, id := range []string{"594f289f", "59aa0011", "abcd1234", "abcd12345"} {
		if err := m.Save(newSession(id, StatusCompleted)); err != nil {
			t.Fatal(err)
		}
	}
	for arg, want := range map[string]string{
		"594f289f":  "594f289f", // whole id
		"594f":      "594f289f",
		"5":         "",
		"59a":       "59aa0011",
		"abcd1234":  "abcd1234", // exact wins over being a prefix of abcd12345
		"abcd12345": "abcd12345",
	} {
		got, err := m.Resolve(arg)
		if want == "" {
			var amb *AmbiguousError
			if !errors.As(err, &amb) || strings.Join(amb.IDs, ",") != "594f289f,59aa0011" {
				t.Errorf("Resolve(%q) = %q, %v; want ambiguous between 594f289f and 59aa0011", arg, got, err)
			} else if msg := err.Error(); !strings.Contains(msg, "594f289f, 59aa0011") {
				t.Errorf("ambiguous message %q does not list the candidates", msg)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", arg, got, err, want)
		}
	}
	for _, bad := range []string{"", "zz", "594f289f0", "../594f", ".5", "-5"} {
		var nf *NotFoundError
		if got, err := m.Resolve(bad); !errors.As(err, &nf) {
			t.Errorf("Resolve(%q) = %q, %v; want NotFoundError", bad, got, err)
		}
	}
	var nf *NotFoundError
	if _, err := m.Resolve("594e"); !errors.As(err, &nf) || len(nf.Nearest) == 0 || nf.Nearest[0] != "594f289f" {
		t.Errorf("a near miss does not suggest the nearest id: %v", err)
	}
}

func TestResolveAmbiguousListIsBounded(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir())
	for _, c := range "0123456789abcdef" {
		if err := m.Save(newSession("aa"+string(c)+"00000", StatusCompleted)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.Resolve("aa")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || len(amb.IDs) != 16 {
		t.Fatalf("got %v", err)
	}
	if msg := err.Error(); !strings.HasSuffix(msg, "and 6 more") || strings.Contains(msg, "aaf00000") {
		t.Errorf("message %q", msg)
	}
}
