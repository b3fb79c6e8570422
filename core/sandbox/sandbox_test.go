package sandbox_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
)

func needBwrap(t *testing.T) string {
	t.Helper()
	path, err := sandbox.Find()
	if err != nil {
		t.Skip("bubblewrap is not installed: apt-get install bubblewrap")
	}
	return path
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// fixture is a repository with a linked worktree, and a home with a key.
type fixture struct {
	base, work, home string
	policy           *sandbox.Policy
}

func newFixture(t *testing.T) *fixture {
	bwrap := needBwrap(t)
	base, home := t.TempDir(), t.TempDir()
	git(t, base, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(base, "README"), []byte("hi\n"), 0o644)
	git(t, base, "add", "-A")
	git(t, base, "commit", "-q", "-m", "first")
	work := filepath.Join(base, ".worktrees", "b1")
	git(t, base, "worktree", "add", "-q", "-b", "vibeteam/b1", work)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("SECRET KEY"), 0o600)
	os.MkdirAll(filepath.Join(home, ".claude"), 0o700)
	os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"user":true}`), 0o600)
	os.MkdirAll(filepath.Join(base, ".vibeteam", "sessions"), 0o755)
	return &fixture{base: base, work: work, home: home, policy: &sandbox.Policy{
		Bwrap: bwrap, BaseDir: base, WorkDir: work, Home: home,
		StateDir: filepath.Join(base, ".vibeteam", "sandbox", "s1"),
	}}
}

// sh runs script in the sandbox with sh -c, in dir; its output and exit.
func (f *fixture) sh(t *testing.T, dir, script string, env map[string]string) (string, int) {
	t.Helper()
	plan, err := f.policy.Plan(dir, nil, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	p, err := runner.StartHeadless(runner.Spec{Command: "sh", Args: []string{"-c", script}, Dir: dir, Env: env, NoInput: true, MergeOutput: true, Sandbox: plan}, func(c runner.Chunk) { out.Write(c.Raw) })
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	return out.String(), p.Result().ExitCode
}

func TestSandboxFencesAWorktree(t *testing.T) {
	f := newFixture(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	for _, c := range []struct{ name, script string }{
		{"read the key", "cat " + f.home + "/.ssh/id_rsa"},
		{"write the home", "echo x > " + f.home + "/planted"},
		{"write the checkout", "echo x > " + f.base + "/planted"},
		{"plant a hook", "echo x > " + f.base + "/.git/hooks/pre-commit"},
		{"edit the config", "echo '[core]' >> " + f.base + "/.git/config"},
		{"edit a session", "echo x > " + f.base + "/.vibeteam/sessions/s.json"},
		{"read AWS", `test -n "$AWS_SECRET_ACCESS_KEY" && echo "$AWS_SECRET_ACCESS_KEY"`},
		{"see vibeteam", "kill -0 " + strconv.Itoa(os.Getpid())},
	} {
		out, code := f.sh(t, f.work, c.script, nil)
		if code == 0 {
			t.Errorf("%s: succeeded inside the sandbox: %q", c.name, out)
		}
	}
	for _, p := range []string{f.home + "/planted", f.base + "/planted", f.base + "/.git/hooks/pre-commit", f.base + "/.vibeteam/sessions/s.json"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// The work: a file, a commit in the worktree, the agent's settings.
	out, code := f.sh(t, f.work, "echo done > work.txt && git add work.txt && git -c user.name=a -c user.email=a@a commit -q -m work && echo '{\"hook\":1}' > "+f.home+"/.claude/settings.json && echo ok", nil)
	if code != 0 {
		t.Fatalf("the work failed inside the sandbox (exit %d): %s", code, out)
	}
	if got := git(t, f.work, "log", "-1", "--format=%s"); got != "work" {
		t.Errorf("the worktree's last commit is %q, want work", got)
	}
	if b, _ := os.ReadFile(filepath.Join(f.home, ".claude", "settings.json")); string(b) != `{"user":true}` {
		t.Errorf("the user's agent settings changed: %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.policy.StateDir, "home", ".claude", "settings.json")); !strings.Contains(string(b), "hook") {
		t.Errorf("the session's copy of the settings lacks the agent's write: %q", b)
	}
}

// A path under /tmp named on the command line is shown inside (a program,
// a launch file), but not a socket there, nor one in a directory shown:
// an argument can be bead text naming /tmp/.X11-unix or an ssh-agent's.
func TestASocketNamedOnTheCommandLineIsNotShown(t *testing.T) {
	f := newFixture(t)
	dir, err := os.MkdirTemp("", "vt-sockets")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, name := range []string{"X0", "agent.1"} {
		ln, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
	}
	os.WriteFile(filepath.Join(dir, "launch.json"), []byte("{}"), 0o644)
	script := `test -f "$1/launch.json" || exit 10; test -S "$1/X0" && exit 11; test -S "$2" && exit 12; test -S "$3" && exit 13; exit 0`
	plan, err := f.policy.Plan(f.work, nil, sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	p, err := runner.StartHeadless(runner.Spec{Command: "sh", Args: []string{"-c", script, "sh", dir, filepath.Join(dir, "agent.1"), filepath.Join(dir, "X0")}, Dir: f.work, NoInput: true, MergeOutput: true, Sandbox: plan}, func(c runner.Chunk) { got.Write(c.Raw) })
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if c := p.Result().ExitCode; c != 0 {
		t.Errorf("exit %d (10: the directory named was not shown; 11–13: a socket was): %s", c, got.String())
	}
}
