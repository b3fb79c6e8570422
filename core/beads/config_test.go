package beads

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".vibeteam"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The README's config.yaml loads, and chooses as the README says.
func TestReadmeConfig(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n# \\.vibeteam/config\\.yaml\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("the README shows no config.yaml")
	}
	cfg, err := LoadConfig(writeConfig(t, string(m[1])))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bead       Bead
		name, rule string
	}{
		{Bead{"issue_type": "bug"}, "fix-bug", ConfigFile + " grimoires.by_type.bug"},
		{Bead{"issue_type": "chore"}, "implement-bead", ConfigFile + " grimoires.default"},
		{Bead{"issue_type": "bug", "labels": []any{"area:x", "grimoire:special"}}, "special", "label grimoire:special"},
	} {
		if name, rule := Select(tc.bead, cfg); name != tc.name || rule != tc.rule {
			t.Errorf("%v: %s (%s), want %s (%s)", tc.bead, name, rule, tc.name, tc.rule)
		}
	}
	if name, rule := Select(Bead{}, Config{}); name != DefaultGrimoire || rule != "the built-in default" {
		t.Errorf("no config: %s (%s)", name, rule)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"grimoire:\n  default: x\n":        `.vibeteam/config.yaml:1:1: unknown key "grimoire" (did you mean "grimoires"?)`,
		"grimoires:\n  defualt: x\n":       `.vibeteam/config.yaml:2:3: grimoires: unknown key "defualt" (did you mean "default"?)`,
		"grimoires:\n  by_type: [a, b]\n":  `.vibeteam/config.yaml:2:12: grimoires.by_type: must be`,
		"grimoires: {default: [x]}\n":      `.vibeteam/config.yaml:1:22: grimoires.default: must be a string`,
		"grimoires:\n  default: x\n bad\n": `.vibeteam/config.yaml:3`,
	} {
		_, err := LoadConfig(writeConfig(t, text))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s…", text, err, want)
		}
	}
	if cfg, err := LoadConfig(t.TempDir()); err != nil || cfg.Default != "" {
		t.Errorf("no file: %+v, %v", cfg, err)
	}
}

func TestSanitizeID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"bd-12": "bd-12", "vt.7": "vt.7", "proj/x y": "proj-x-y", "..a..b": "a.b", "-x": "x",
		"x.lock": "x-lock", "a@{b}": "a-b", "": "bead", "日本": "bead", "a\x00b": "a-b",
	} {
		if got := SanitizeID(in); got != want {
			t.Errorf("SanitizeID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseBeadBothShapes(t *testing.T) {
	t.Parallel()
	for _, data := range []string{`[{"id":"bd-1","title":"T","labels":["a"]}]`, `{"id":"bd-1","title":"T","labels":["a"]}`} {
		b, err := parseBead([]byte(data))
		if err != nil || b.ID() != "bd-1" || b.Title() != "T" || len(b.Labels()) != 1 {
			t.Errorf("%s: %v %v", data, b, err)
		}
	}
	b := Bead{"dependencies": []any{
		map[string]any{"id": "bd-2", "status": "open", "dependency_type": "blocks"},
		map[string]any{"id": "bd-3", "status": "closed", "dependency_type": "blocks"},
		map[string]any{"id": "bd-4", "status": "open", "dependency_type": "related"},
		map[string]any{"depends_on_id": "bd-5", "type": "blocks", "status": "in_progress"},
	}}
	if got := strings.Join(b.OpenBlockers(), ", "); got != "bd-2 (open), bd-5 (in_progress)" {
		t.Errorf("blockers: %s", got)
	}
}
