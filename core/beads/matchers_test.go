package beads

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// covenMatchers is coven's documented example (docs/orchestration).
const covenMatchers = `matchers:
  # Match tasks with security-related tags
  - grimoire: security-audit
    any_tags: ["security", "auth*", "crypto*"]  # Glob patterns supported

  # Match high-priority bugs
  - grimoire: urgent-bugfix
    any_tags: ["bug"]
    priority: [0, 1]  # P0 or P1 only

  # Match features with test requirements
  - grimoire: implement-with-tests
    all_tags: ["feature", "needs-tests"]  # Must have BOTH tags

  # Exclude experimental work from CI
  - grimoire: simple
    any_tags: ["task"]
    not_tags: ["experimental"]  # Veto if this tag present

  - grimoire: mid
    priority_range: [2, 3]

# Fallback when no matcher applies
default: implement
`

func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, text := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestMatchersRouteByTagsAndPriority(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(project(t, map[string]string{
		".coven/grimoire-matchers.yaml": covenMatchers,
		ConfigFile:                      "grimoires:\n  by_type: {bug: fix-bug}\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	bead := func(prio any, typ string, labels ...string) Bead {
		l := []any{}
		for _, x := range labels {
			l = append(l, x)
		}
		return Bead{"id": "bd-1", "issue_type": typ, "priority": prio, "labels": l}
	}
	const f = ".coven/grimoire-matchers.yaml"
	for _, tc := range []struct {
		bead       Bead
		name, rule string
	}{
		{bead(float64(4), "task", "authz"), "security-audit", f + ":3 matchers[0]"},
		{bead(float64(1), "bug", "bug"), "urgent-bugfix", f + ":7 matchers[1]"},
		{bead(float64(4), "bug", "bug"), "fix-bug", ConfigFile + " grimoires.by_type.bug"},
		{bead(float64(4), "feature", "needs-tests", "feature"), "implement-with-tests", f + ":12 matchers[2]"},
		{bead(float64(4), "feature", "feature"), "implement", f + " default"},
		{bead(float64(4), "task", "task"), "simple", f + ":16 matchers[3]"},
		{bead(float64(4), "task", "task", "experimental"), "implement", f + " default"},
		{bead(float64(2), "task"), "mid", f + ":20 matchers[4]"},
		{bead("P3", "task"), "mid", f + ":20 matchers[4]"},
		{bead(float64(1), "task", "grimoire:mine", "security"), "mine", "label grimoire:mine"},
	} {
		name, rule := Select(tc.bead, cfg)
		if name != tc.name || rule != tc.rule {
			t.Errorf("%v: %s (%s), want %s (%s)", tc.bead, name, rule, tc.name, tc.rule)
		}
	}
}

// .vibeteam's file is read, and coven's then is not.
func TestVibeteamMatchersFirst(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(project(t, map[string]string{
		".vibeteam/grimoire-matchers.yaml": "matchers:\n  - {grimoire: ours, any_tags: [x]}\n",
		".coven/grimoire-matchers.yaml":    "matchers:\n  - {grimoire: theirs, any_tags: [x]}\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if name, rule := Select(Bead{"labels": []any{"x"}}, cfg); name != "ours" || rule != ".vibeteam/grimoire-matchers.yaml:2 matchers[0]" {
		t.Errorf("%s (%s)", name, rule)
	}
}

// A bad matchers file is an error at its file:line:col.
func TestMatchersErrors(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"matchers:\n  - {grimoire: x, any_tag: [a]}\n":           `.coven/grimoire-matchers.yaml:2:19: matchers[0]: unknown key "any_tag"`,
		"matchers:\n  - {any_tags: [a]}\n":                       `.coven/grimoire-matchers.yaml:2:5: matchers[0]: `,
		"matchers:\n  - {grimoire: ../x, any_tags: [a]}\n":       `.coven/grimoire-matchers.yaml:2:16: matchers[0].grimoire: "../x" has a path separator`,
		"matchers:\n  - {grimoire: x}\n":                         `.coven/grimoire-matchers.yaml:2:5: matchers[0]: has no condition`,
		"matchers:\n  - {grimoire: x, priority: [7]}\n":          `.coven/grimoire-matchers.yaml:2:30: matchers[0].priority[0]: must be`,
		"matchers:\n  - {grimoire: x, priority_range: [3, 1]}\n": `.coven/grimoire-matchers.yaml:2:35: matchers[0].priority_range: must be [from, to]`,
		"matchers:\n  - {grimoire: x, any_tags: [\"[a\"]}\n":     `matchers[0].any_tags[0]: "[a" is not a glob pattern`,
		"matchers: [\n": `.coven/grimoire-matchers.yaml:`,
	} {
		_, err := LoadConfig(project(t, map[string]string{".coven/grimoire-matchers.yaml": text}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// The README's grimoire-matchers.yaml loads and routes as it says.
func TestReadmeMatchers(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n# \\.vibeteam/grimoire-matchers\\.yaml\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("the README shows no grimoire-matchers.yaml")
	}
	cfg, err := LoadConfig(project(t, map[string]string{".vibeteam/grimoire-matchers.yaml": string(m[1])}))
	if err != nil {
		t.Fatal(err)
	}
	for labels, want := range map[string]string{"auth-x": "security-audit", "feature needs-tests": "implement-with-tests", "feature needs-tests experimental": "implement-bead"} {
		var l []any
		for _, x := range strings.Fields(labels) {
			l = append(l, x)
		}
		if name, _ := Select(Bead{"labels": l, "priority": float64(3)}, cfg); name != want {
			t.Errorf("%s: %s, want %s", labels, name, want)
		}
	}
}
