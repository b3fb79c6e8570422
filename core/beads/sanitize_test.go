package beads

import (
	"os/exec"
	"strings"
	"testing"
)

func TestSanitizeID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 200)
	cases := []struct{ in, want string }{
		{"bd-12", "bd-12"},
		{"vt.7", "vt.7"},
		{"bd-a1b2.3", "bd-a1b2.3"},
		{"Proj_X-9", "Proj_X-9"},
		{"proj/x y", "proj-x-y"},
		{"a//b", "a-b"},
		{"..a..b", "a.b"},
		{"a...b", "a.b"},
		{"-x", "x"},
		{"--x--", "x"},
		{".hidden", "hidden"},
		{"x.", "x"},
		{"x.lock", "x-lock"},
		{"x.lock.", "x-lock"},
		{"x.lock/", "x-lock"},
		{"a.lock.b", "a.lock.b"},
		{"a@{b}", "a-b"},
		{"@", ""},
		{"a@b", "a-b"},
		{"a~1^2:3?*[4]\\5", "a-1-2-3-4-5"},
		{"a\x00b\x7fc\td\ne", "a-b-c-d-e"},
		{"héllo", "h-llo"},
		{"日本", ""},
		{"", ""},
		{".", ""},
		{"..", ""},
		{"/", ""},
		{"refs/heads/main", "refs-heads-main"},
		{"HEAD", "HEAD"},
		{long, ""},
	}
	git, _ := exec.LookPath("git")
	seen := map[string]string{}
	for _, tc := range cases {
		got := SanitizeID(tc.in)
		switch tc.want {
		case "":
			// Nothing readable is kept, or too much: "bead-" or a cut, and a hash.
			if tc.in == long {
				if len(got) > maxSafeID || !strings.HasPrefix(got, strings.Repeat("a", 60)) {
					t.Errorf("SanitizeID(long) = %q", got)
				}
			} else if !strings.HasPrefix(got, "bead-") || len(got) != len("bead-")+8 {
				t.Errorf("SanitizeID(%q) = %q, want bead-<hash>", tc.in, got)
			}
		default:
			if got != tc.want {
				t.Errorf("SanitizeID(%q) = %q, want %q", tc.in, got, tc.want)
			}
		}
		if other, dup := seen[got]; dup && tc.want == "" {
			t.Errorf("%q and %q both give %q", tc.in, other, got)
		}
		seen[got] = tc.in
		// One path component.
		if got == "" || got == "." || got == ".." || strings.ContainsAny(got, "/\\\x00") || len(got) > maxSafeID {
			t.Errorf("SanitizeID(%q) = %q is no path component", tc.in, got)
		}
		if got != SanitizeID(got) {
			t.Errorf("SanitizeID(%q) = %q changes again: %q", tc.in, got, SanitizeID(got))
		}
		if git == "" {
			continue
		}
		// One valid branch name component.
		if out, err := exec.Command(git, "check-ref-format", "refs/heads/vibeteam/"+got).CombinedOutput(); err != nil {
			t.Errorf("SanitizeID(%q) = %q: git check-ref-format refuses it: %v %s", tc.in, got, err, out)
		}
	}
	if git == "" {
		t.Log("git not on PATH: names not checked with git check-ref-format")
	}
}
