package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "abd", 1}, {"kitten", "sitting", 3},
		{"594f", "594f289f", 4}, {"héllo", "hello", 1}, {"", "ab", 2},
	} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q,%q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

func TestClosest(t *testing.T) {
	known := []string{"executionMode", "extraArgs", "prompt", "id"}
	for w, want := range map[string]string{
		"executionmode": "executionMode", // case is ignored
		"extraArg":      "extraArgs",
		"promt":         "prompt",
		"pmorpt":        "prompt",
		"ib":            "id",
		"x":             "", // a distance as long as the word is no suggestion
		"zzzzzz":        "", // nothing near
		"pxxxxt":        "", // too far
	} {
		if got := Closest(w, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", w, got, want)
		}
	}
}
