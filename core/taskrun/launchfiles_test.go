package taskrun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/runner"
)

// A home overlay mirrors the user's CLI directory and merges the servers
// into a copy of its settings; the user's files are not written.
func TestOverlayHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	user := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(user, 0o700); err != nil {
		t.Fatal(err)
	}
	settings := `{"security":{"auth":{"selectedType":"oauth"}},"mcpServers":{"mine":{"command":"x"}}}`
	for name, data := range map[string]string{"settings.json": settings, "oauth_creds.json": "{}"} {
		if err := os.WriteFile(filepath.Join(user, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	spec := runner.Spec{Env: map[string]string{"KEEP": "1"}}
	cleanup, err := writeLaunchFiles(&spec, []adapters.LaunchFile{{Env: "GEMINI_CLI_HOME", Home: ".gemini", Name: "settings.json",
		Data: []byte(`{"mcpServers":{"ra":{"command":"fakemcp"}}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	overlay := spec.Env["GEMINI_CLI_HOME"]
	if spec.Env["KEEP"] != "1" || overlay == "" {
		t.Fatalf("env: %v", spec.Env)
	}
	var got map[string]map[string]any
	data, _ := os.ReadFile(filepath.Join(overlay, ".gemini", "settings.json"))
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got["mcpServers"]["mine"] == nil || got["mcpServers"]["ra"] == nil || got["security"]["auth"] == nil {
		t.Errorf("merged settings: %s", data)
	}
	if target, err := os.Readlink(filepath.Join(overlay, ".gemini", "oauth_creds.json")); err != nil || target != filepath.Join(user, "oauth_creds.json") {
		t.Errorf("the login is not mirrored: %q %v", target, err)
	}
	if mine, _ := os.ReadFile(filepath.Join(user, "settings.json")); string(mine) != settings {
		t.Errorf("the user's settings changed: %s", mine)
	}
	cleanup()
	if _, err := os.Stat(overlay); !os.IsNotExist(err) {
		t.Errorf("the overlay is left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(user, "oauth_creds.json")); err != nil {
		t.Errorf("cleanup reached the user's files: %v", err)
	}
}
