package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// wantUsage checks the shape of every usage error: exit 2, nothing on stdout,
// one line on stderr that says want.
func wantUsage(t *testing.T, args []string, r result, want string) {
	t.Helper()
	if r.code != ExitUsage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("%q: exit %d, want 2 and one line saying %q\nstdout:\n%s\nstderr:\n%s", args, r.code, want, r.stdout, r.stderr)
	}
}

func TestUsageErrorsAreOneLineOnStderr(t *testing.T) {
	p := newProject(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"; see vibeteam --help`},
		{[]string{"rn", "demo"}, "(did you mean run?)"},
		{[]string{"sesions"}, "(did you mean sessions?)"},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "run", "resume"}, "help takes one command"},
		{[]string{"--bogus"}, "unknown flag --bogus; see vibeteam --help"},
		{[]string{"--verison"}, "(did you mean --version?)"},
		{[]string{"run", "--bogus", "demo"}, "unknown flag --bogus; see vibeteam run --help"},
		{[]string{"run", "demo", "--verbos"}, "unknown flag --verbos (did you mean --verbose?)"},
		{[]string{"run", "--set"}, "flag needs an argument: --set"},
		{[]string{"run", "--keep-sessions", "many", "demo"}, `invalid value "many" for flag --keep-sessions`},
		{[]string{"run", "--keep-sessions", "-1", "demo"}, "--keep-sessions must be 0 or more, not -1"},
		{[]string{"resume", "--keep-sessions=-3", "0000"}, "--keep-sessions must be 0 or more, not -3"},
		{[]string{"run", "demo", "extra"}, "run needs one workflow file or name"},
		{[]string{"show"}, "show needs a session id"},
		{[]string{"sessions", "extra"}, `sessions takes no arguments, got "extra"; see vibeteam sessions --help`},
		{[]string{"sessions", "help"}, "sessions takes no arguments"},
		{[]string{"adapters", "--json", "extra"}, "adapters takes no arguments"},
		{[]string{"version", "extra"}, "version takes no arguments"},
		{[]string{"completion"}, "completion needs one shell"},
		{[]string{"completion", "tcsh"}, `no completion for shell "tcsh"`},
	} {
		wantUsage(t, c.args, p.run(c.args...), c.want)
	}
	t.Setenv("VIBETEAM_KEEP_SESSIONS", "-1")
	wantUsage(t, []string{"run", "demo"}, p.run("run", "demo"), "--keep-sessions must be 0 or more, not -1")
	if p.exists(".vibeteam/sessions") {
		t.Error("a rejected command created sessions")
	}
}

// 0 turns pruning off, as --help says.
func TestKeepSessionsZeroKeepsAll(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: x\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: print=hi }\n")
	for range 3 {
		wantCode(t, p.run("run", "wf.yaml", "--keep-sessions", "0"), 0)
	}
	if n := len(p.sessions()); n != 3 {
		t.Errorf("%d sessions kept, want all 3", n)
	}
	r := p.run("run", "--help")
	if !strings.Contains(r.stdout, "(0 keeps all)") {
		t.Errorf("run --help does not say what 0 means:\n%s", r.stdout)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := p.exec(args...)
		wantCode(t, r, 0)
		if !strings.HasPrefix(r.stdout, "vibeteam version ") || strings.Count(r.stdout, "\n") != 1 || r.stderr != "" {
			t.Errorf("%v: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		r := p.exec(args...)
		wantCode(t, r, 0)
		for _, want := range []string{"COMMANDS:", "completion", "version", "--version", "prefix"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v lacks %q:\n%s", args, want, r.stdout)
			}
		}
	}
	r := p.exec("help", "run")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "vibeteam run [command options] FILE|NAME") || r.stderr != "" {
		t.Errorf("help run:\n%s\nstderr: %s", r.stdout, r.stderr)
	}
	if flag := p.exec("run", "--help"); flag.stdout != r.stdout {
		t.Errorf("help run and run --help differ:\n%s\n---\n%s", r.stdout, flag.stdout)
	}
}

// copySession writes a copy of session from under the id to.
func (p *project) copySession(from, to string) {
	p.t.Helper()
	mgr := state.NewManager(p.dir)
	var raw map[string]any
	readJSON(p.t, mgr.SessionPath(from), &raw)
	raw["id"] = to
	b, err := json.Marshal(raw)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(mgr.SessionPath(to), b, 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// Session ids are taken by any unique prefix; an ambiguous one lists the
// candidates.
func TestSessionIDPrefixes(t *testing.T) {
	p := newProject(t)
	p.write("wf.yaml", "id: pre\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: \"require=fixed stamp=a.t\" }\n")
	wantCode(t, p.run("run", "wf.yaml"), 1)
	id := p.only().ID
	// A second session sharing the first four characters, not the fifth.
	other := id[:4] + map[bool]string{true: "0", false: "1"}[id[4] != '0'] + "abc"
	p.copySession(id, other)

	r := p.run("show", id[:5])
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "session   "+id) {
		t.Errorf("show %s did not show %s:\n%s", id[:5], id, r.stdout)
	}
	for _, cmd := range []string{"show", "resume"} {
		args := []string{cmd, id[:4]}
		r := p.run(args...)
		wantUsage(t, args, r, "ambiguous")
		if !strings.Contains(r.stderr, id) || !strings.Contains(r.stderr, other) {
			t.Errorf("%v does not list both candidates: %s", args, r.stderr)
		}
	}
	wantUsage(t, []string{"show", "zz"}, p.run("show", "zz"), `no session "zz"`)

	p.write("fixed", "")
	r = p.run("resume", id[:5])
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "session "+id+" completed") {
		t.Errorf("resume by prefix did not resume %s:\n%s", id, r.stderr)
	}
	if s, err := state.NewManager(p.dir).Load(id); err != nil || s.Status != state.StatusCompleted {
		t.Errorf("session %s after resume: %v, %v", id, s, err)
	}
}

// A signal that arrives before the session exists stops vibeteam with the
// signal's exit code, and leaves nothing behind; a second one quits at once.
// --events names a FIFO, whose opening blocks until the test opens the other
// end, so the signal is sure to come after vibeteam started and before it
// creates the session.
func TestSignalBeforeTheSessionLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		twice bool
		code  int
	}{
		{"SIGTERM", syscall.SIGTERM, false, 143},
		{"SIGINT", syscall.SIGINT, false, 130},
		{"SIGINT twice while stuck", syscall.SIGINT, true, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			p.write("wf.yaml", "id: x\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: stamp=ran.t }\n")
			fifo := p.path("events.pipe")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			cmd := p.command("run", "wf.yaml", "--events", "events.pipe")
			var out bytes.Buffer
			errb := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = &out, errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			// The folders are made just before --events is opened, well after
			// the signals are caught.
			waitFor(t, func() bool { return p.exists(".vibeteam/logs") })
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return strings.Contains(errb.String(), "stopping before the session starts") })
			var events *os.File
			if tc.twice {
				if err := cmd.Process.Signal(tc.sig); err != nil {
					t.Fatal(err)
				}
			} else {
				// A reader lets vibeteam's open of --events return.
				f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				events = f
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("%v, want exit %d\nstderr:\n%s", err, tc.code, errb.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
			if events != nil {
				if written, _ := io.ReadAll(events); len(written) != 0 {
					t.Errorf("events written: %s", written)
				}
				if !strings.Contains(errb.String(), "interrupted before the session started") {
					t.Errorf("stderr:\n%s", errb.String())
				}
			}
			if p.exists("ran.t") {
				t.Error("the task ran after the signal")
			}
			entries, _ := os.ReadDir(p.path(".vibeteam/sessions"))
			for _, e := range entries {
				t.Errorf("left behind: sessions/%s", e.Name())
			}
		})
	}
}

// The lock of a session that was never saved (its vibeteam was killed in
// between) is removed by the pruning of a later run.
func TestOrphanLockIsPruned(t *testing.T) {
	p := newProject(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	host, _ := os.Hostname()
	rec, _ := json.Marshal(map[string]any{"pid": dead.Process.Pid, "host": host, "time": time.Now().Add(-time.Minute)})
	lock := p.write(".vibeteam/sessions/dead0001.lock", string(rec))
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	p.write("wf.yaml", "id: x\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: print=hi }\n")
	wantCode(t, p.run("run", "wf.yaml"), 0)
	if p.exists(".vibeteam/sessions/dead0001.lock") {
		t.Error("orphan lock not pruned")
	}
	p.only()
}

// Folders made open by a permissive umask are made private by the next run.
func TestOpenStateFoldersAreTightened(t *testing.T) {
	p := newProject(t)
	dirs := []string{".vibeteam", ".vibeteam/sessions", ".vibeteam/logs"}
	for _, d := range dirs {
		if err := os.MkdirAll(p.path(d), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p.path(d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	p.write("wf.yaml", "id: x\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, executionMode: headless, prompt: print=hi }\n")
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 0)
	for _, d := range dirs {
		if fi, err := os.Stat(p.path(d)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", d, fi.Mode().Perm(), err)
		}
	}
	if strings.Contains(r.stderr, "warning") {
		t.Errorf("warned although the folders could be tightened:\n%s", r.stderr)
	}
}
