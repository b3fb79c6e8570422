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
