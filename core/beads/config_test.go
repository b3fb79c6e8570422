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

func TestConfigMoreErrors(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"- grimoires\n":                            `.vibeteam/config.yaml:1:1: must be a mapping`,
		"grimoires: implement-bead\n":              `.vibeteam/config.yaml:1:12: grimoires: must be a mapping`,
		"grimoires:\n  default: \"\"\n":            `.vibeteam/config.yaml:2:12: grimoires.default: must not be empty`,
		"grimoires:\n  default: 12\n":              `.vibeteam/config.yaml:2:12: grimoires.default: must be a string (write "12" in quotes)`,
		"grimoires:\n  by_type:\n    bug: \n":      `.vibeteam/config.yaml:3:9: grimoires.by_type.bug: must be a string`,
		"grimoires:\n  by_type:\n    bug: [x]\n":   `.vibeteam/config.yaml:3:10: grimoires.by_type.bug: must be a string`,
		"grimoires:\n  by_tpye: {}\n":              `.vibeteam/config.yaml:2:3: grimoires: unknown key "by_tpye" (did you mean "by_type"?)`,
		"grimoires:\n  default: a\n  default: b\n": `.vibeteam/config.yaml:3:3: grimoires: duplicate key "default"`,
		"agents: {}\n":                             `.vibeteam/config.yaml:1:1: unknown key "agents"`,
	} {
		_, err := LoadConfig(writeConfig(t, text))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s…", text, err, want)
		}
	}
	// Every problem is reported, in file order.
	_, err := LoadConfig(writeConfig(t, "grimoires:\n  defualt: x\n  by_type: {bug: 1}\nextra: 1\n"))
	if err == nil || strings.Count(err.Error(), ".vibeteam/config.yaml:") != 3 || !strings.HasPrefix(err.Error(), ".vibeteam/config.yaml:2:") {
		t.Errorf("several problems: %v", err)
	}
	// An empty file, or only a comment, is an empty config.
	for _, text := range []string{"", "# nothing yet\n", "grimoires:\n", "grimoires: {}\n"} {
		if cfg, err := LoadConfig(writeConfig(t, text)); err != nil || cfg.Default != "" || len(cfg.ByType) != 0 {
			t.Errorf("%q: %+v, %v", text, cfg, err)
		}
	}
}

func TestSelectOrder(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(writeConfig(t, "grimoires:\n  by_type:\n    feature: build-it\n    bug: fix-bug\n  default: do-it\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bead       Bead
		cfg        Config
		name, rule string
	}{
		{Bead{"issue_type": "feature", "labels": []any{"grimoire:fix-bug"}}, cfg, "fix-bug", "label grimoire:fix-bug"},
		{Bead{"issue_type": "feature", "labels": []any{"area:x", "grimoire:", "grimoire:a", "grimoire:b"}}, cfg, "a", "label grimoire:a"},
		{Bead{"issue_type": "feature", "labels": []any{"grimoires:x"}}, cfg, "build-it", ".vibeteam/config.yaml grimoires.by_type.feature"},
		{Bead{"issue_type": "bug"}, cfg, "fix-bug", ".vibeteam/config.yaml grimoires.by_type.bug"},
		{Bead{"issue_type": "chore"}, cfg, "do-it", ".vibeteam/config.yaml grimoires.default"},
		{Bead{}, cfg, "do-it", ".vibeteam/config.yaml grimoires.default"},
		{Bead{"issue_type": "bug"}, Config{}, "implement-bead", "the built-in default"},
		{Bead{"issue_type": "bug", "labels": []any{"grimoire:x"}}, Config{}, "x", "label grimoire:x"},
		{Bead{"issue_type": "chore"}, Config{ByType: map[string]string{"bug": "fix-bug"}}, "implement-bead", "the built-in default"},
	} {
		if name, rule := Select(tc.bead, tc.cfg); name != tc.name || rule != tc.rule {
			t.Errorf("%v: %s (%s), want %s (%s)", tc.bead, name, rule, tc.name, tc.rule)
		}
	}
}

// A label or config.yaml names a grimoire; a path, which would run any
// file, is an error naming the bead and the label (or the config's line).
func TestGrimoireNamesAreNames(t *testing.T) {
	t.Parallel()
	for _, label := range []string{
		"grimoire:../outside/evil.yaml", "grimoire:/tmp/evil.yaml", "grimoire:sub/x", `grimoire:..\x`,
		"grimoire:..", "grimoire:evil.yaml", "grimoire:.hidden", "grimoire:a\x1b[2Jb",
	} {
		b := Bead{"id": "bd-7", "labels": []any{label}}
		name, rule, err := Choose(b, Config{})
		if err == nil {
			t.Errorf("%q: chose %q (%s)", label, name, rule)
			continue
		}
		if want := "bead bd-7: label " + printable(label) + ": "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s…", label, err, want)
		}
		if strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("%q: the error holds an escape: %q", label, err)
		}
	}
	if _, _, err := Choose(Bead{"id": "bd-7", "labels": []any{"grimoire:/etc/x"}}, Config{}); err == nil || !strings.Contains(err.Error(), `"/etc/x" is an absolute path`) {
		t.Errorf("absolute path: %v", err)
	}
	for _, label := range []string{"grimoire:fix-bug", "grimoire:my_grimoire2"} {
		if name, _, err := Choose(Bead{"labels": []any{label}}, Config{}); err != nil || name != strings.TrimPrefix(label, "grimoire:") {
			t.Errorf("%q: %q, %v", label, name, err)
		}
	}
	for text, want := range map[string]string{
		"grimoires:\n  default: ../evil\n":          `.vibeteam/config.yaml:2:12: grimoires.default: "../evil" has a path separator`,
		"grimoires:\n  default: /tmp/evil.yaml\n":   `.vibeteam/config.yaml:2:12: grimoires.default: "/tmp/evil.yaml" is an absolute path`,
		"grimoires:\n  by_type: {bug: evil.yaml}\n": `.vibeteam/config.yaml:2:18: grimoires.by_type.bug: "evil.yaml" has a "."`,
		"grimoires:\n  by_type:\n    bug: '..'\n":   `.vibeteam/config.yaml:3:10: grimoires.by_type.bug: ".." has ".."`,
	} {
		_, err := LoadConfig(writeConfig(t, text))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s…", text, err, want)
		}
	}
}

// merge.gate is the default merge gate: a command, not empty.
func TestConfigGate(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(writeConfig(t, "merge:\n  gate: go test ./...\n"))
	if err != nil || cfg.Gate != "go test ./..." {
		t.Fatalf("%+v, %v", cfg, err)
	}
	for text, want := range map[string]string{
		"merge:\n  gate: \"\"\n":  `.vibeteam/config.yaml:2:9: merge.gate: must not be empty`,
		"merge:\n  gate: true\n":  `.vibeteam/config.yaml:2:9: merge.gate: must be a string`,
		"merge:\n  gates: make\n": `.vibeteam/config.yaml:2:3: merge: unknown key "gates" (did you mean "gate"?)`,
		"merge: make check\n":     `.vibeteam/config.yaml:1:8: merge: must be a mapping`,
	} {
		_, err := LoadConfig(writeConfig(t, text))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s…", text, err, want)
		}
	}
}
