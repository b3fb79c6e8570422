package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDiskFullIsAFailure runs a grimoire on a small tmpfs that one of its
// steps fills: the session cannot be saved any more, and vibeteam says so
// and exits 1, never "completed".
func TestDiskFullIsAFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v %s", err, out)
	}
	defer func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	}()
	p := &project{t: t, dir: dir}
	p.write("g.yaml", `name: full
steps:
  - name: fill
    type: script
    command: cat /dev/zero > filler 2>/dev/null; echo filled
  - name: next
    type: script
    command: echo next step
  - name: many
    type: loop
    max_iterations: 60
    on_max_iterations: exit
    steps:
      - name: one
        type: script
        command: echo iteration {{.many.iteration}} of a loop that journals more than the disk has left
  - name: last
    type: script
    command: echo last step
`)
	r := p.exec("run", "g.yaml")
	t.Logf("run on a full disk:\n%s", r.stderr)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "vibeteam: save session") || !strings.Contains(r.stderr, "no space left on device") || strings.Contains(r.stderr, "completed") {
		t.Errorf("stderr does not name the cause, or says completed:\n%s", r.stderr)
	}
	// Space again: what was saved is whole, and resume goes on from it.
	if err := os.Remove(p.path("filler")); err != nil {
		t.Fatal(err)
	}
	id := onlySessionID(t, p)
	r = p.exec("resume", id)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	s := p.sessionByID(id)
	for _, k := range []string{"0", "1", "2", "2.60/0", "3"} {
		if s.Runs[k] == nil || s.Runs[k].Status != "done" {
			t.Errorf("run %s: %+v", k, s.Runs[k])
		}
	}
}
