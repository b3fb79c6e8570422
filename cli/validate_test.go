//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/internal/source"
)

// execBounded runs the binary like p.exec, but kills it and fails the test
// if it takes longer than bound, and reports its peak memory (RSS, bytes).
func (p *project) execBounded(bound time.Duration, args ...string) (result, int64) {
	p.t.Helper()
	cmd := p.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-done
		p.t.Fatalf("vibeteam %s did not finish within %v\nstderr:\n%s", strings.Join(args, " "), bound, errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return result{out.String(), errb.String(), code}, rss
}

// A workflow or adapter file that is not a regular file, or is too large,
// is refused at once, naming it: never a hang, never a read of /dev/zero.
func TestBadInputFilesAreRefusedFast(t *testing.T) {
	// The bound is for a loaded CI machine; on an idle one these take
	// milliseconds. The binary is built with -race under go test -race,
	// which multiplies its memory.
	const bound = 20 * time.Second
	maxRSS := int64(100 << 20)
	if raceEnabled {
		maxRSS *= 4
	}
	usesAdapter := func(name string) string {
		return "id: w\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: " + name + ", executionMode: headless, prompt: x }\n"
	}
	for _, c := range []struct {
		name  string
		setup func(p *project) string // returns the file as the error must name it
		args  []string
		code  int
	}{
		{"fifo workflow, validate", func(p *project) string { p.mkfifo("wf.yaml"); return "wf.yaml" }, []string{"validate", "wf.yaml"}, 2},
		{"fifo workflow, run", func(p *project) string { p.mkfifo("wf.yaml"); return "wf.yaml" }, []string{"run", "wf.yaml"}, 2},
		{"fifo named workflow, run", func(p *project) string {
			p.mkfifo(".vibeteam/workflows/review.yaml")
			return "review.yaml"
		}, []string{"run", "review"}, 2},
		{"fifo adapter, run", func(p *project) string {
			p.write("wf.yaml", usesAdapter("pipe"))
			return p.mkfifo(".vibeteam/adapters/pipe.yaml")
		}, []string{"run", "wf.yaml"}, 2},
		{"fifo adapter, adapters", func(p *project) string { return p.mkfifo(".vibeteam/adapters/pipe.yaml") }, []string{"adapters"}, 1},
		{"fifo adapter, validate it", func(p *project) string { return p.mkfifo(".vibeteam/adapters/pipe.yaml") }, []string{"validate", ".vibeteam/adapters/pipe.yaml"}, 2},
		{"/dev/zero adapter, run", func(p *project) string {
			p.write("wf.yaml", usesAdapter("zero"))
			p.symlink("/dev/zero", ".vibeteam/adapters/zero.yaml")
			return "zero.yaml"
		}, []string{"run", "wf.yaml"}, 2},
		{"/dev/zero workflow, validate", func(p *project) string { p.symlink("/dev/zero", "wf.yaml"); return "wf.yaml" }, []string{"validate", "wf.yaml"}, 2},
		{"directory workflow, validate", func(p *project) string {
			if err := os.Mkdir(p.path("wf.yaml"), 0o755); err != nil {
				p.t.Fatal(err)
			}
			return "wf.yaml"
		}, []string{"validate", "wf.yaml"}, 2},
		{"oversize workflow, run", func(p *project) string {
			p.write("wf.yaml", usesAdapter("fake")+"#"+strings.Repeat("x", source.MaxSize)+"\n")
			return "wf.yaml"
		}, []string{"run", "wf.yaml"}, 2},
		{"oversize adapter, run", func(p *project) string {
			p.write("wf.yaml", usesAdapter("big"))
			return p.write(".vibeteam/adapters/big.yaml", "command: x\n#"+strings.Repeat("x", source.MaxSize)+"\n")
		}, []string{"run", "wf.yaml"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t)
			file := c.setup(p)
			start := time.Now()
			r, rss := p.execBounded(bound, c.args...)
			wantCode(t, r, c.code)
			if !strings.Contains(r.stderr, file) {
				t.Errorf("the error does not name %s:\n%s", file, r.stderr)
			}
			if rss > maxRSS {
				t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, maxRSS>>20)
			}
			t.Logf("%v, %d MiB", time.Since(start).Round(time.Millisecond), rss>>20)
		})
	}
}

func (p *project) mkfifo(rel string) string {
	p.t.Helper()
	full := p.write(rel, "")
	if err := os.Remove(full); err != nil {
		p.t.Fatal(err)
	}
	if err := syscall.Mkfifo(full, 0o644); err != nil {
		p.t.Skipf("mkfifo: %v", err)
	}
	return full
}

func (p *project) symlink(target, rel string) string {
	p.t.Helper()
	full := p.write(rel, "")
	if err := os.Remove(full); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Symlink(target, full); err != nil {
		p.t.Fatal(err)
	}
	return full
}

// A broken adapter file breaks only the workflows that use it: the others
// run, with one warning line, and "adapters" shows what is wrong.
func TestBrokenAdapterFileBreaksOnlyItsWorkflows(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/adapters/broken.yaml", "name: broken\ncommand: x\nmodes: { headless: {} }\nstates:\n  - { name: s, pattern: '(' }\n")
	p.write("ok.yaml", "id: ok\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: x }\n")
	p.write("uses.yaml", "id: uses\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: broken, executionMode: headless, prompt: x }\n")

	r := p.run("run", "ok.yaml")
	wantCode(t, r, 0)
	var warnings []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "broken.yaml") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "warning") {
		t.Errorf("want one warning line naming broken.yaml, got:\n%s", r.stderr)
	}
	wantCode(t, p.run("validate", "ok.yaml"), 0)

	for _, cmd := range []string{"run", "validate"} {
		r = p.run(cmd, "uses.yaml")
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, `uses.yaml:5:27: stages[0].tasks[0].adapter: adapter "broken" cannot be used: its file is broken: `) ||
			!strings.Contains(r.stderr, "broken.yaml:5:") {
			t.Errorf("%s of a workflow using the broken adapter:\n%s", cmd, r.stderr)
		}
	}

	r = p.run("adapters")
	wantCode(t, r, 1)
	if !strings.Contains(r.stdout, "broken") || !strings.Contains(r.stdout, "fake") || !strings.Contains(r.stderr, "broken.yaml:5:") {
		t.Errorf("adapters:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	r = p.run("adapters", "--json")
	wantCode(t, r, 1)
	var rows []struct {
		Name     string
		Broken   bool
		Problems []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	var got []string
	for _, row := range rows {
		if row.Broken {
			got = append(got, row.Name)
			if len(row.Problems) != 1 || !strings.Contains(row.Problems[0], "broken.yaml:5:") {
				t.Errorf("problems of %s: %q", row.Name, row.Problems)
			}
		}
	}
	if len(got) != 1 || got[0] != "broken" {
		t.Errorf("broken rows %v", got)
	}
}

// validate finds, before anything starts, what run would stop on.
func TestValidateChecksWhatRunChecks(t *testing.T) {
	p := newProject(t)
	wf := func(task string) string {
		return "id: v\nstages:\n  - id: s\n    tasks:\n      - " + task + "\n"
	}
	for _, c := range []struct {
		name, task string
		args       []string
		code       int
		want       string // a line of stderr
	}{
		{"interactive shell without a prompt", `{ id: a, adapter: shell }`, nil, 2,
			"wf.yaml:5:9: stages[0].tasks[0].prompt: adapter \"shell\" needs a prompt in interactive mode (it runs `sh -c -- PROMPT`)"},
		{"a variable without --set", `{ id: a, adapter: fake, prompt: "fix {{.target}}" }`, nil, 2,
			`wf.yaml:5:41: stages[0].tasks[0].prompt: missing variable "target" (set it with --set target=...)`},
		{"a variable with --set", `{ id: a, adapter: fake, prompt: "fix {{.target}}" }`, []string{"--set", "target=x"}, 0, ""},
		{"a missing cwd", `{ id: a, adapter: fake, cwd: nowhere }`, nil, 2,
			"wf.yaml:5:38: stages[0].tasks[0].cwd: directory " + p.path("nowhere") + " does not exist"},
		{"a typo in executionMode", `{ id: a, adapter: fake, executionMode: headles, prompt: x }`, nil, 2,
			`wf.yaml:5:48: stages[0].tasks[0].executionMode: must be "interactive", "headless" or "acp", got "headles" (did you mean "headless"?)`},
		{"a prompt the mode cannot pass", `{ id: a, adapter: fake, prompt: "-rf /" }`, nil, 2,
			`wf.yaml:5:41: stages[0].tasks[0].prompt: adapter fake: the prompt "-rf /" starts with "-"`},
		{"an undefined alias", `{ id: a, adapter: *agent }`, nil, 2,
			`wf.yaml:5:27: invalid YAML: unknown anchor 'agent' referenced`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p.write("wf.yaml", wf(c.task))
			r := p.run(append([]string{"validate", "wf.yaml"}, c.args...)...)
			wantCode(t, r, c.code)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if c.want == "" {
				if !strings.Contains(r.stdout, "wf.yaml: ok") {
					t.Errorf("stdout %q", r.stdout)
				}
				return
			}
			// Exactly one problem, then the summary line.
			if len(lines) != 2 || !strings.HasPrefix(lines[0], c.want) {
				t.Errorf("stderr:\n%s\nwant one problem starting with\n%s", r.stderr, c.want)
			}
			// run stops on the same problem, before a session exists.
			r = p.run(append([]string{"run", "wf.yaml"}, c.args...)...)
			wantCode(t, r, 2)
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("run:\n%s\nwant %s", r.stderr, c.want)
			}
			if len(p.sessions()) != 0 {
				t.Error("run created a session for an invalid workflow")
			}
		})
	}
}

// An agent CLI that is not installed is an error for validate as for run,
// which is about to start it, with the command that installs a built-in
// one; with --offline it is a warning (the file runs on another machine).
func TestMissingCommandFailsValidateAsRun(t *testing.T) {
	p := newProject(t)
	p.write(".vibeteam/adapters/ghost.yaml", "command: no-such-agent-anywhere\nmodes: { headless: {} }\n")
	p.write("wf.yaml", "id: g\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: ghost, executionMode: headless, prompt: x }\n      - { id: b, adapter: ghost, executionMode: headless, prompt: y }\n")
	want := `wf.yaml:5:27: stages[0].tasks[0].adapter: command "no-such-agent-anywhere" of adapter "ghost" is not installed (not found on PATH)`
	r := p.run("validate", "wf.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, want+"\n") || strings.Count(r.stderr, "not installed") != 1 || strings.Contains(r.stdout, "ok") {
		t.Errorf("validate: one error for the two tasks expected\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	r = p.run("validate", "--offline", "wf.yaml")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "wf.yaml:5:27: warning: stages[0].tasks[0].adapter: command") || !strings.Contains(r.stdout, "wf.yaml: ok") {
		t.Errorf("validate --offline: a warning expected\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	r = p.run("run", "wf.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, want) {
		t.Errorf("run:\n%s", r.stderr)
	}
	if len(p.sessions()) != 0 {
		t.Error("run created a session")
	}
	// A built-in adapter's CLI: the command that installs it.
	p.write("claude.yaml", "id: c\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: claude, executionMode: headless, prompt: x }\n")
	cmd := p.command("validate", "claude.yaml")
	cmd.Env = append(cmd.Env, "PATH=/usr/bin:/bin")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), `command "claude" of adapter "claude" is not installed (not found on PATH); install it: npm i -g @anthropic-ai/claude-code`) {
		t.Errorf("validate without claude:\n%s", out)
	}
}

// Given an adapter file, validate checks it as one.
func TestValidateAdapterFile(t *testing.T) {
	p := newProject(t)
	p.write("aider.yaml", "name: aider\ncommand: "+fakeAgent+"\nmodes:\n  headless: { prompt: { flag: --message, form: equals } }\n")
	r := p.run("validate", "aider.yaml")
	wantCode(t, r, 0)
	if r.stdout != "aider.yaml: ok (adapter \"aider\")\n" || r.stderr != "" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	p.write("aider.yaml", "name: aider\ncommand: aider\nmodes:\n  headless: { prompt: { flag: --message, form: equal } }\n")
	r = p.run("validate", "aider.yaml")
	wantCode(t, r, 2)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "aider.yaml:4:48: modes.headless.prompt.form: must be \"separate\" or \"equals\", got \"equal\" (did you mean \"equals\"?)") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	// One in .vibeteam/adapters is an adapter file whatever it holds.
	r = p.run("validate", ".vibeteam/adapters/fake.yaml")
	wantCode(t, r, 0)
}

func TestValidateJSON(t *testing.T) {
	p := newProject(t)
	p.write("bad.yaml", "id: j\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headles }\n")
	p.write(".vibeteam/adapters/ghost.yaml", "command: no-such-agent-anywhere\nmodes: { headless: {} }\n")
	p.write("warn.yaml", "id: w\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: ghost, executionMode: headless, prompt: x }\n")
	p.write("ok.yaml", "id: ok\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake }\n")
	r := p.run("validate", "--json", "--offline", "bad.yaml", "warn.yaml", "ok.yaml")
	wantCode(t, r, 2)
	var got []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	want := []map[string]any{
		{"file": "bad.yaml", "line": 5.0, "col": 48.0, "field": "stages[0].tasks[0].executionMode", "severity": "error",
			"message": `must be "interactive", "headless" or "acp", got "headles" (did you mean "headless"?)`},
		{"file": "warn.yaml", "line": 5.0, "col": 27.0, "field": "stages[0].tasks[0].adapter", "severity": "warning",
			"message": `command "no-such-agent-anywhere" of adapter "ghost" is not installed (not found on PATH)`},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems:\n%s", len(got), r.stdout)
	}
	for i := range want {
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("problem %d: %s = %v, want %v", i, k, got[i][k], v)
			}
		}
	}
	// Nothing to report is an empty array, not nothing.
	r = p.run("validate", "--json", "ok.yaml")
	wantCode(t, r, 0)
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("stdout %q, want []", r.stdout)
	}
}
