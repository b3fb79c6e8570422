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
	// The landing workflow: the matrix pushes branches, one job lands
	// them through vibeteam land's gate.
	data, err = os.ReadFile("../examples/github-actions/land.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fromJSON(needs.ready.outputs.beads)", `git push origin "vibeteam/$BEAD"`, "needs: [ready, bead]", `vibeteam land "${branches[@]}" --gate`, "git push origin HEAD"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("land.yml lacks %q", want)
		}
	}
	// It never forces main: a main that moved while the job landed makes
	// the plain push fail, rather than be overwritten.
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "git push") && (strings.Contains(l, "--force") || strings.Contains(l, " -f") || strings.Contains(l, " +")) {
			t.Errorf("land.yml forces a push: %s", strings.TrimSpace(l))
		}
	}
	readme, _ := os.ReadFile("../README.md")
	for _, ex := range []string{"examples/github-actions/beads.yml", "examples/github-actions/land.yml"} {
		if !strings.Contains(string(readme), ex) {
			t.Errorf("the README does not point to %s", ex)
		}
	}
}
