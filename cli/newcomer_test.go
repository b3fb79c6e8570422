package cli

import (
	"os/exec"
	"testing"
)

// `go build -o vibeteam .`, as the README says, leaves no untracked file.
func TestBuiltBinaryIsIgnored(t *testing.T) {
	t.Parallel()
	if err := exec.Command("git", "-C", "..", "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	out, err := exec.Command("git", "-C", "..", "check-ignore", "--no-index", "vibeteam").CombinedOutput()
	if err != nil || string(out) != "vibeteam\n" {
		t.Errorf("git check-ignore vibeteam: %q, %v: the binary would be untracked", out, err)
	}
}
