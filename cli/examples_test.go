package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The GitHub Actions example passes actionlint (pinned as a go tool in
// go.mod) and does what the README says: a matrix of the ready beads, one
// headless run each, .vibeteam/ kept as an artifact.
func TestGitHubActionsExample(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/github-actions/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example workflow: %v", err)
	}
	out, err := exec.Command("go", append([]string{"tool", "actionlint"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
	data, err := os.ReadFile("../examples/github-actions/beads.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vibeteam ready --json", "fromJSON(needs.ready.outputs.beads)", `vibeteam run --bead "$BEAD" --headless`, "path: .vibeteam/", "upload-artifact"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the example lacks %q", want)
		}
	}
	readme, _ := os.ReadFile("../README.md")
	if !strings.Contains(string(readme), "examples/github-actions/beads.yml") {
		t.Error("the README does not point to the example")
	}
}
