package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// TestResumeReadyTakesSetEnv: a backlog run with a secret from --set-env,
// interrupted while its first bead works, then resumed. Without the secret
// the resume refuses (exit 2, naming it); with --set-env its value, not
// ***, reaches the bead resumed and the bead that becomes ready during the
// resume; the session keeps it as ***.
func TestResumeReadyTakesSetEnv(t *testing.T) {
	t.Parallel()
	const token = "tok-backlog-5c1e"
	p := newBeadProject(t, bead("bd-1", "One", nil), bead("bd-2", "After one", blocks("bd-1")))
	out := filepath.Join(t.TempDir(), "seen.log")
	gate := filepath.Join(t.TempDir(), "go")
	p.write(".vibeteam/grimoires/ship.yaml", `name: ship
steps:
  - name: work
    type: script
    command: |
      echo "{{.bead.id}} {{.token}}" >> `+out+`
      while [ ! -e `+gate+` ]; do sleep 0.05; done
      echo {{.bead.id}} > {{.bead.id}}.txt
  - name: merge
    type: merge
    require_review: false
`)
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: ship\n")
	env := []string{"PATH=" + fakeBDDir + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKEBD_DB=" + p.db, "FAKEBD_LOG=" + p.log, "MY_TOKEN=" + token}
	run := p.command("run", "--ready", "--headless", "--jobs", "1", "--set-env", "token=MY_TOKEN")
	run.Env = append(run.Env, env...)
	runErr := &syncBuffer{}
	run.Stderr = runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waitLong(t, "bd-1 working", func() bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), "bd-1") })
	_ = run.Process.Signal(syscall.SIGINT)
	done := make(chan int, 1)
	go func() { done <- exitCode(run.Wait()) }()
	select {
	case code := <-done:
		if code != 130 {
			t.Fatalf("interrupted run: exit %d\n%s", code, runErr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the interrupted run did not end\n%s", runErr.String())
	}
	bl := p.backlogSession()
	if bl.Vars["token"] != state.Redacted {
		t.Fatalf("the backlog keeps token as %q", bl.Vars["token"])
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	bare := p.command("resume", bl.ID, "--headless")
	bare.Env = append(bare.Env, env...)
	if r := runResult(t, bare); r.code != 2 || !strings.Contains(r.stderr, "token") {
		t.Fatalf("resume without the secret: exit %d, want 2 naming it\n%s", r.code, r.stderr)
	}
	resume := p.command("resume", bl.ID, "--headless", "--set-env", "token=MY_TOKEN")
	resume.Env = append(resume.Env, env...)
	r := runResult(t, resume)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	seen, _ := os.ReadFile(out)
	if got, want := string(seen), "bd-1 "+token+"\nbd-1 "+token+"\nbd-2 "+token+"\n"; got != want {
		t.Errorf("the beads saw:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(r.stderr, token) {
		t.Errorf("resume --ready shows the secret:\n%s", r.stderr)
	}
	leakCheck(t, p.project, "resume --ready", nil, token)
}
