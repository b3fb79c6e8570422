package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
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

// TestTornLinesAreReportedOnceAndIgnored: a kill in the middle of a write
// leaves the journal and the event log ending in half a line. Resume says
// so once, goes on from what is whole, and leaves both files whole.
func TestTornLinesAreReportedOnceAndIgnored(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: torn
steps:
  - name: one
    type: script
    command: echo one
  - name: wait
    type: script
    command: exit 1
  - name: three
    type: script
    command: echo three
`)
	if r := p.exec("run", "g.yaml"); r.code != 3 {
		t.Fatalf("exit %d, want 3 (blocked)\n%s", r.code, r.stderr)
	}
	id := onlySessionID(t, p)
	m := state.NewManager(p.dir)
	journal := strings.TrimSuffix(m.SessionPath(id), ".json") + ".journal"
	for _, f := range []string{journal, m.EventLogPath(id)} {
		fh, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fh.WriteString(`{"seq":999,"session":{"status":"compl`)
		fh.Close()
	}
	p.write("g.yaml", strings.Replace(p.read("g.yaml"), "exit 1", "echo fixed", 1))
	r := p.exec("resume", id, "--reload")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "cut short"); n != 2 {
		t.Errorf("%d reports of a line cut short, want 2 (journal, event log):\n%s", n, r.stderr)
	}
	if _, err := state.ReadEvents(m.EventLogPath(id)); err != nil {
		t.Errorf("the event log is not whole after resume: %v", err)
	}
	s := p.sessionByID(id)
	if len(s.Damage) != 0 || s.Status != state.StatusCompleted {
		t.Errorf("after resume: status %s, damage %v", s.Status, s.Damage)
	}
}
