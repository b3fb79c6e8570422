package beads

import (
	"strings"
	"testing"
)

func TestConfigNotify(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(writeConfig(t, "notify: notify-send vibeteam \"$(jq -r .next)\"\ngrimoires:\n  default: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Notify != `notify-send vibeteam "$(jq -r .next)"` || cfg.Default != "x" {
		t.Errorf("config %+v", cfg)
	}
	for text, want := range map[string]string{
		"notify: [a]\n": `.vibeteam/config.yaml:1:9: notify: must be a string`,
		"notfy: x\n":    `.vibeteam/config.yaml:1:1: unknown key "notfy" (did you mean "notify"?)`,
	} {
		_, err := LoadConfig(writeConfig(t, text))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s…", text, err, want)
		}
	}
}
