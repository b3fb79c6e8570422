package cli

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	expect "github.com/Netflix/go-expect"

	"github.com/vibeteam/vibeteam/core/state"
)

// TestCtrlCDuringTheMergeLeavesTheCheckoutWhole types Ctrl-C at a real
// terminal while the merge updates the user's checkout (thousands of
// files): git finishes or never starts, the checkout is never left
// half-updated, no index.lock stays, and the session says which.
func TestCtrlCDuringTheMergeLeavesTheCheckoutWhole(t *testing.T) {
	t.Parallel()
	caught := 0
	const trials = 3
	for trial := 0; trial < trials; trial++ {
		p := newBeadProject(t)
		p.write("bead.json", `{"id":"bd-2","title":"Many files","status":"open"}`)
		p.write(".vibeteam/grimoires/many.yaml", `name: many
steps:
  - name: work
    type: script
    command: 'mkdir -p gen && for i in $(seq 1 3000); do echo "file $i" > gen/f$i.txt; done'
  - name: merge
    type: merge
    require_review: false
`)
		p.git("add", "bead.json", ".vibeteam/grimoires/many.yaml")
		p.git("commit", "-q", "-m", "setup")
		p.write("README", "hello\nmine, uncommitted\n")
		p.write("notes.txt", "untracked\n")
		mainBefore := p.git("rev-parse", "main")

		screen := &syncBuffer{}
		c, err := expect.NewConsole(expect.WithStdout(screen), expect.WithDefaultTimeout(60*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		cmd := p.command("run", "many", "--bead-file", "bead.json")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Tty(), c.Tty(), c.Tty()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Ctrl-C as soon as git holds the checkout's index (or, if the
		// merge is too quick to see, once the merge step starts).
		lock := p.path(".git/index.lock")
		deadline := time.Now().Add(60 * time.Second)
		seen := false
		for time.Now().Before(deadline) {
			if _, err := os.Stat(lock); err == nil {
				seen = true
				break
			}
			if trial%2 == 1 && strings.Contains(screen.String(), "merge (merge)") {
				break
			}
			if cmd.ProcessState != nil {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		if seen {
			caught++
		}
		_, _ = c.Write([]byte{3})
		code := waitExit(t, cmd, screen)
		_ = c.Close()

		label := fmt.Sprintf("trial %d (Ctrl-C with index.lock seen: %v)", trial, seen)
		if p.exists(".git/index.lock") {
			t.Errorf("%s: index.lock left", label)
		}
		if st := p.git("status", "--porcelain=v1"); st != "M README\n?? notes.txt" && st != " M README\n?? notes.txt" {
			t.Errorf("%s: the checkout is not whole:\n%s", label, firstLines(st, 10))
		}
		if p.read("README") != "hello\nmine, uncommitted\n" || p.read("notes.txt") != "untracked\n" {
			t.Errorf("%s: the user's files changed", label)
		}
		s := p.only()
		moved := p.git("rev-parse", "main") != mainBefore
		switch {
		case moved && s.Merged == "":
			t.Errorf("%s: main has the work but the session (%s) does not say so; exit %d", label, s.Status, code)
		case !moved && s.Merged != "":
			t.Errorf("%s: the session says merged, main did not move", label)
		case moved && !p.exists("gen/f3000.txt"):
			t.Errorf("%s: main moved but the checkout lacks the merged files", label)
		case !moved && p.exists("gen/f1.txt"):
			t.Errorf("%s: main did not move but merged files are in the checkout", label)
		}
		if code != 0 && code != 130 {
			t.Errorf("%s: exit %d, want 130 (or 0 if it had ended)\n%s", label, code, screen.String())
		}
		if code == 130 && s.Status == state.StatusCompleted {
			t.Errorf("%s: exit 130 but completed", label)
		}
	}
	t.Logf("Ctrl-C landed while git held the index in %d of %d trials", caught, trials)
}
