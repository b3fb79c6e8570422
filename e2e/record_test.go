//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/handlers"
)

// lockedBuffer is a raw log the test reads while the terminal writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

// TestRecordClaudeScreens records the bytes Claude Code writes to its
// terminal from start-up through the trust and API-key dialogs to the idle
// screen, one file per step (each the whole stream up to that step), for
// the golden screen tests of core/runner (testdata/screens). It runs only
// with VIBETEAM_E2E_RECORD=<dir>:
//
//	VIBETEAM_E2E_RECORD=$PWD/core/runner/testdata/screens ./e2e/run.sh -run TestRecordClaudeScreens
//
// The screens are checked as they are recorded: a step whose screen does
// not show what the real terminal would (the selection on the option just
// chosen) fails here.
func TestRecordClaudeScreens(t *testing.T) {
	dir := os.Getenv("VIBETEAM_E2E_RECORD")
	if dir == "" {
		t.Skip("VIBETEAM_E2E_RECORD is not set")
	}
	w := newWorld(t, worldOptions{})
	version := installedVersion(t, "claude")
	var raw lockedBuffer
	env := map[string]string{}
	for _, kv := range w.environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	term, err := runner.StartTerminal(runner.Spec{Command: agentBins["claude"], Args: []string{"--permission-mode", "default"},
		Dir: w.project, Env: env, Cols: 120, Rows: 40}, runner.TerminalOptions{RawLog: &raw})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Stop(2 * time.Second)

	// settled waits until the screen shows want and no output came for
	// half a second (a settled frame, as a person would see it).
	settled := func(want string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			s := term.Screen()
			if strings.Contains(s, want) && time.Since(term.LastOutput()) > 500*time.Millisecond {
				return s
			}
			select {
			case <-term.Done():
				t.Fatalf("claude exited waiting for %q; screen:\n%s", want, term.Screen())
			case <-time.After(50 * time.Millisecond):
			}
		}
		t.Fatalf("never saw %q; screen:\n%s", want, term.Screen())
		return ""
	}
	save := func(step string) {
		t.Helper()
		name := "claude-" + version + "-" + step + ".raw"
		if err := os.WriteFile(filepath.Join(dir, name), raw.bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s:\n%s", name, term.Screen())
	}
	// selectOption moves the menu's ❯ to the option, checking each step
	// (on the dialog, from anchor down: the transcript above may hold ❯
	// lines too).
	selectOption := func(anchor, label, step string) {
		t.Helper()
		for i := 0; i < 6; i++ {
			s := term.Screen()
			if at := strings.LastIndex(s, anchor); at >= 0 {
				s = s[at:]
			}
			m := handlers.FindOption(s, label)
			if m.OnOption() {
				return
			}
			if m.Key() == "" {
				t.Fatalf("no option %q or no selection on:\n%s", label, s)
			}
			before := term.Screen()
			_ = term.Send(m.Key())
			deadline := time.Now().Add(10 * time.Second)
			for term.Screen() == before && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			settled(label)
			save(step)
		}
		t.Fatalf("the selection never reached %q", label)
	}

	settled("Yes, I trust this folder")
	save("trust")
	selectOption("Quick safety check", "Yes, I trust this folder", "trust-yes")
	_ = term.Send("\r")
	settled("Do you want to use this API key?")
	save("apikey")
	selectOption("Do you want to use this API key?", "Yes", "apikey-yes")
	_ = term.Send("\r")
	settled("for shortcuts")
	save("idle")
	// A turn whose Bash call asks for permission (manual mode), then the
	// idle screen after it.
	_ = term.Send(createPrompt)
	settled(createPrompt)
	_ = term.Send("\r")
	settled("Do you want to proceed?")
	save("permission")
	selectOption("Do you want to proceed?", "Yes", "permission-yes")
	_ = term.Send("\r")
	settled(fakeanthropic.DoneText)
	save("idle-after-tool")
}

// installedVersion is the version of the agent's npm package in the cache.
func installedVersion(t *testing.T, name string) string {
	t.Helper()
	for _, a := range agents {
		if a.name != name {
			continue
		}
		b, err := os.ReadFile(filepath.Join(cacheDir, "node_modules", a.pkg, "package.json"))
		if err != nil {
			t.Fatal(err)
		}
		var pj struct{ Version string }
		if err := json.Unmarshal(b, &pj); err != nil || pj.Version == "" {
			t.Fatalf("%s/package.json: no version (%v)", a.pkg, err)
		}
		return pj.Version
	}
	t.Fatalf("unknown agent %q", name)
	return ""
}
