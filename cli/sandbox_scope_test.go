package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sandbox: block on a loop reaches the steps inside it, and one on a
// stage step reaches its tasks: their writes to the paths it lists go
// through.
func TestALoopsAndAStagesSandboxReachTheStepsInside(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	loopDir, stageDir := filepath.Join(h.home, "loop-cache"), filepath.Join(h.home, "stage-cache")
	for _, d := range []string{loopDir, stageDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.write(".vibeteam/grimoires/nested.yaml", strings.NewReplacer("LOOP", loopDir, "STAGE", stageDir).Replace(`name: nested
steps:
  - name: l
    type: loop
    max_iterations: 1
    sandbox: {write: [LOOP]}
    steps:
      - name: build
        type: script
        command: echo built > LOOP/out.txt
        on_success: exit_loop
  - name: s
    type: stage
    sandbox: {write: [STAGE]}
    tasks:
      - { id: t, adapter: fake, executionMode: headless, prompt: "write=STAGE/out.txt:made" }
`))
	r := h.run("run", "nested", "--sandbox")
	wantCode(t, r, 0)
	if s := h.only(); s.Sandbox == nil {
		t.Fatal("the run was not sandboxed")
	}
	for path, want := range map[string]string{filepath.Join(loopDir, "out.txt"): "built\n", filepath.Join(stageDir, "out.txt"): "made"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s holds %q (%v), want %q\nstderr:\n%s", path, b, err, want, r.stderr)
		}
	}
}
