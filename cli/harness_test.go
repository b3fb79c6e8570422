package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// Binaries built once for the package's tests.
var (
	fakeAgent string // testdata/fakeagent
	fakeACP   string // testdata/fakeacp
	fakeTUI   string // testdata/faketui
	fakeLine  string // testdata/fakeline
	fakeBDDir string // holds bd, testdata/fakebd
	vibeteam  string // this repository's main package
)

func TestMain(m *testing.M) {
	// The tests of other features run unsandboxed, as they were written
	// (their fakes write outside the worktree, read variables the sandbox
	// drops, record pids a pid namespace renumbers); the sandbox's tests
	// ask for it with --sandbox, which wins over the variable.
	os.Setenv("VIBETEAM_SANDBOX", "off")
	dir, err := os.MkdirTemp("", "vibeteam-cli-test")
	if err != nil {
		panic(err)
	}
	fakeAgent = filepath.Join(dir, "fakeagent")
	fakeACP = filepath.Join(dir, "fakeacp")
	vibeteam = filepath.Join(dir, "vibeteam")
	fakeTUI = filepath.Join(dir, "faketui")
	fakeLine = filepath.Join(dir, "fakeline")
	fakeBDDir = filepath.Join(dir, "bdbin")
	build := func(out, pkg string, race bool) {
		args := []string{"build", "-o", out}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			panic(fmt.Sprintf("build %s: %v", pkg, err))
		}
	}
	build(fakeAgent, "../testdata/fakeagent", false)
	build(fakeACP, "../testdata/fakeacp", false)
	build(fakeTUI, "../testdata/faketui", false)
	build(fakeLine, "../testdata/fakeline", false)
	build(filepath.Join(fakeBDDir, "bd"), "../testdata/fakebd", false)
	build(vibeteam, "..", raceEnabled)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// project is a temporary base dir with the fake adapter installed.
type project struct {
	t   *testing.T
	dir string
}

func newProject(t *testing.T) *project {
	t.Helper()
	dir := t.TempDir()
	p := &project{t: t, dir: dir}
	p.write(".vibeteam/adapters/fake.yaml", fmt.Sprintf(`name: fake
command: %s
description: the test agent
modes:
  headless:
    args: [--mode=headless]
    prompt: { position: arg }
  interactive:
    args: [--mode=interactive]
    prompt: { position: arg }
autoPolicy:
  injectArgs: [--injected, yes]
`, fakeAgent))
	p.write(".vibeteam/adapters/tui.yaml", fmt.Sprintf(`name: tui
command: %s
modes:
  interactive:
    args: [-record, rec.txt, -pidfile, tui.pid, -work, 300ms]
    prompt: { position: arg }
quietPeriod: 100ms
states:
  - { name: interaction_trust, pattern: 'Do you trust the files' }
  - { name: interaction_menu, pattern: '(?s)Allow this command\?.*1\. Yes' }
  - { name: interaction_confirm, pattern: '\(y/n\)' }
  - { name: working, pattern: 'esc to interrupt' }
  - { name: interaction_idle, pattern: '(?m)^│ >\s*$' }
autoPolicy:
  handlers:
    - { when: 'Do you trust the files', use: 'select:1' }
    - { when: '\(y/n\)', use: confirmYes }
`, fakeTUI))
	return p
}

func (p *project) path(rel string) string { return filepath.Join(p.dir, rel) }

func (p *project) write(rel, content string) string {
	p.t.Helper()
	full := p.path(rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return full
}

func (p *project) read(rel string) string {
	p.t.Helper()
	b, err := os.ReadFile(p.path(rel))
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
}

func (p *project) exists(rel string) bool {
	_, err := os.Stat(p.path(rel))
	return err == nil
}

// result of one vibeteam invocation.
type result struct {
	stdout, stderr string
	code           int
}

// run runs Main in-process with the project as base dir.
func (p *project) run(args ...string) result {
	p.t.Helper()
	p.t.Chdir(p.dir)
	var out, errb bytes.Buffer
	full := append([]string{"vibeteam", "--base-dir", p.dir}, args...)
	code := Main(full, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return result{out.String(), errb.String(), code}
}

// exec runs the built binary as a user would, in the project dir.
func (p *project) command(args ...string) *exec.Cmd {
	cmd := exec.Command(vibeteam, append([]string{"--base-dir", p.dir}, args...)...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	return cmd
}

func (p *project) exec(args ...string) result {
	p.t.Helper()
	return runResult(p.t, p.command(args...))
}

// runResult runs cmd to its end: its output and exit code.
func runResult(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

func (p *project) sessions() []*state.Session {
	p.t.Helper()
	list, err := state.NewManager(p.dir).List()
	if err != nil {
		p.t.Fatal(err)
	}
	return list
}

// only returns the one session of the project.
func (p *project) only() *state.Session {
	p.t.Helper()
	list := p.sessions()
	if len(list) != 1 {
		p.t.Fatalf("want 1 session, have %d", len(list))
	}
	return list[0]
}

func (p *project) events(id string) []state.Event {
	p.t.Helper()
	evs, err := state.ReadEvents(state.NewManager(p.dir).EventLogPath(id))
	if err != nil {
		p.t.Fatal(err)
	}
	return evs
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// stamps reads the unix-nano timestamps a fake agent appended to a file.
func (p *project) stamps(rel string) []time.Time {
	p.t.Helper()
	var out []time.Time
	for _, l := range strings.Fields(p.read(rel)) {
		var n int64
		fmt.Sscan(l, &n)
		out = append(out, time.Unix(0, n))
	}
	return out
}
