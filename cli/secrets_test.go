package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsStayOutOfTheRecord: values of --set variables and env: keys
// that are secret (by name, or listed under secrets:) reach the task, and
// are written to the session, the journal, the event log and the task logs
// as ***. Resume asks for them again, from --set or the environment.
func TestSecretsStayOutOfTheRecord(t *testing.T) {
	t.Parallel()
	const (
		token    = "tok-9f8e7d6c5b4a"
		password = "hunter2-correct-horse"
		plain    = "plain-but-listed-42"
	)
	p := newProject(t)
	p.write("g.yaml", `name: sec
secrets: [LISTED]
steps:
  - name: use
    type: stage
    tasks:
      - id: show
        adapter: shell
        executionMode: headless
        env: { DB_PASSWORD: "`+password+`" }
        prompt: 'echo "token {{.API_TOKEN}} listed {{.LISTED}} pw $DB_PASSWORD" > seen.txt; echo "printed {{.API_TOKEN}}"'
  - name: gate
    type: script
    command: test -f go.txt
`)
	r := p.exec("run", "g.yaml", "--set", "API_TOKEN="+token, "--set", "LISTED="+plain, "--events", p.path(".vibeteam/events-copy.jsonl"))
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (blocked at the gate)\n%s", r.code, r.stderr)
	}
	want := "token " + token + " listed " + plain + " pw " + password + "\n"
	if got := p.read("seen.txt"); got != want {
		t.Errorf("the task saw %q, want %q", got, want)
	}
	leaks := func(when string) {
		t.Helper()
		_ = filepath.WalkDir(p.path(".vibeteam"), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, s := range []string{token, password, plain} {
				if strings.Contains(string(data), s) {
					t.Errorf("%s: %s holds the secret %q", when, path, s)
				}
			}
			return nil
		})
	}
	leaks("after the run")
	s := p.only()
	if s.Vars["API_TOKEN"] != "***" || s.Vars["LISTED"] != "***" {
		t.Errorf("vars in the session: %v", s.Vars)
	}

	// Resume needs them again: refused without, named.
	p.write("go.txt", "")
	r = p.exec("resume", s.ID)
	if r.code != 2 || !strings.Contains(r.stderr, "API_TOKEN") || !strings.Contains(r.stderr, "DB_PASSWORD") || !strings.Contains(r.stderr, "LISTED") {
		t.Fatalf("resume without the secrets: exit %d\n%s", r.code, r.stderr)
	}
	cmd := p.command("resume", s.ID, "--set", "API_TOKEN="+token, "--set", "LISTED="+plain)
	cmd.Env = append(cmd.Env, "DB_PASSWORD="+password)
	r = runResult(t, cmd)
	if r.code != 0 {
		t.Fatalf("resume with the secrets: exit %d\n%s", r.code, r.stderr)
	}
	leaks("after the resume")
}

// leakCheck fails the test if any file under .vibeteam or any output holds
// one of the values.
func leakCheck(t *testing.T, p *project, when string, outputs map[string]string, values ...string) {
	t.Helper()
	_ = filepath.WalkDir(p.path(".vibeteam"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(path)
		for _, s := range values {
			if strings.Contains(string(data), s) {
				t.Errorf("%s: %s holds the secret %q", when, path, s)
			}
		}
		return nil
	})
	for name, out := range outputs {
		for _, s := range values {
			if strings.Contains(out, s) {
				t.Errorf("%s: %s shows the secret %q:\n%s", when, name, s, out)
			}
		}
		if !strings.Contains(out, "***") {
			t.Errorf("%s: %s does not show *** where the secret was:\n%s", when, name, out)
		}
	}
}

// A secret reaches vibeteam's own stdout and stderr as *** too: the block
// report of a failed script step (printed without --verbose), the
// --verbose mirror, show and log. An inherited credential of an adapter
// (ANTHROPIC_API_KEY) that a task prints is a secret as well, in the
// files and on the terminal.
func TestSecretsStayOffTheTerminal(t *testing.T) {
	t.Parallel()
	const (
		token    = "s3cr3t-tok-4471"
		password = "hunter2-pw-8812"
		apiKey   = "sk-ant-test-key-5309"
	)
	p := newProject(t)
	p.write("g.yaml", `name: leak
steps:
  - name: use
    type: stage
    tasks:
      - id: show
        adapter: shell
        executionMode: headless
        env: { MY_PASSWORD: "`+password+`" }
        prompt: 'echo "task pw $MY_PASSWORD key $ANTHROPIC_API_KEY tok {{.token}}"'
  - name: check
    type: script
    command: 'echo "token is {{.token}} pw `+password+` key $ANTHROPIC_API_KEY"; exit 1'
`)
	for _, verbose := range []bool{false, true} {
		args := []string{"run", "g.yaml", "--set", "token=" + token}
		if verbose {
			args = append(args, "--verbose")
		}
		cmd := p.command(args...)
		cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY="+apiKey)
		r := runResult(t, cmd)
		wantCode(t, r, 3)
		if !strings.Contains(r.stderr, "token is *** pw *** key ***") {
			t.Errorf("verbose %v: the block report does not show the failed step's output redacted:\n%s", verbose, r.stderr)
		}
		if verbose && !strings.Contains(r.stderr, "task pw *** key *** tok ***") {
			t.Errorf("the --verbose mirror:\n%s", r.stderr)
		}
		leakCheck(t, p, "run", map[string]string{"stderr": r.stderr}, token, password, apiKey)
	}
	for _, s := range p.sessions() {
		// show and log with the key in vibeteam's environment too.
		show := p.command("show", s.ID)
		show.Env = append(show.Env, "ANTHROPIC_API_KEY="+apiKey)
		rs := runResult(t, show)
		log := p.command("log", s.ID)
		log.Env = append(log.Env, "ANTHROPIC_API_KEY="+apiKey)
		rl := runResult(t, log)
		leakCheck(t, p, "show and log", map[string]string{"show": rs.stdout + rs.stderr, "log": rl.stdout + rl.stderr}, token, password, apiKey)
	}
}

// --set-env NAME and --set-file key=PATH give a variable its value out of
// vibeteam's argv; it is a secret whatever its name (*** in the files and
// on the terminal), and resume takes it again the same way.
func TestSetEnvAndSetFile(t *testing.T) {
	t.Parallel()
	const (
		cred   = "deploy-cred-77aa"
		fromFs = "file-cred-99bb"
	)
	p := newProject(t)
	p.write("cred.txt", fromFs+"\n")
	p.write("g.yaml", `name: sec
steps:
  - name: use
    type: stage
    tasks:
      - id: show
        adapter: shell
        executionMode: headless
        prompt: 'echo "deploy {{.deploy}} other {{.other}}" | tee seen.txt'
  - name: gate
    type: script
    command: 'echo "gate sees {{.deploy}}"; test -f go.txt'
`)
	cmd := p.command("run", "g.yaml", "--set-env", "deploy=DEPLOY_CRED", "--set-file", "other=cred.txt", "--verbose")
	cmd.Env = append(cmd.Env, "DEPLOY_CRED="+cred)
	r := runResult(t, cmd)
	wantCode(t, r, 3)
	if got := p.read("seen.txt"); got != "deploy "+cred+" other "+fromFs+"\n" {
		t.Errorf("the task saw %q", got)
	}
	leakCheck(t, p, "run", map[string]string{"stderr": r.stderr}, cred, fromFs)
	s := p.only()
	if s.Vars["deploy"] != "***" || s.Vars["other"] != "***" {
		t.Errorf("vars in the session: %v", s.Vars)
	}
	p.write("go.txt", "")
	r = p.exec("resume", s.ID)
	if r.code != 2 || !strings.Contains(r.stderr, "deploy") || !strings.Contains(r.stderr, "other") {
		t.Fatalf("resume without them: exit %d\n%s", r.code, r.stderr)
	}
	cmd = p.command("resume", s.ID, "--set-env", "deploy=DEPLOY_CRED", "--set-file", "other=cred.txt")
	cmd.Env = append(cmd.Env, "DEPLOY_CRED="+cred)
	r = runResult(t, cmd)
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "gate sees ***") && !strings.Contains(p.read(".vibeteam/sessions/"+s.ID+".json"), "gate sees ***") {
		t.Errorf("the gate's output is not redacted:\n%s", r.stderr)
	}
	leakCheck(t, p, "resume", nil, cred, fromFs)
	for _, c := range []struct{ flag, want string }{
		{"--set-env=NOT_SET_ANYWHERE_X", "the environment variable NOT_SET_ANYWHERE_X is not set"},
		{"--set-file=k=missing.txt", "--set-file k: stat missing.txt"},
		{"--set-file=nokey", "expected key=PATH"},
	} {
		r := p.exec("run", "g.yaml", c.flag)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d\n%s", c.flag, r.code, r.stderr)
		}
	}
	r = p.exec("run", "--help")
	if !strings.Contains(r.stdout+r.stderr, "--set-env") || !strings.Contains(r.stdout+r.stderr, "--set-file") {
		t.Errorf("run --help does not tell of --set-env and --set-file")
	}
}
