package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vibeteam/vibeteam/core/state"
)

// killedMidway runs a grimoire whose steps one and two append to
// count.txt and whose step three waits for the file go, and kills
// vibeteam with SIGKILL while it waits: the journal holds the lines of
// steps one and two. It returns the session's id and journal path.
func killedMidway(t *testing.T, p *project) (string, string) {
	t.Helper()
	p.write("g.yaml", `name: gap
steps:
  - name: one
    type: script
    command: echo one >> count.txt
  - name: two
    type: script
    command: echo two >> count.txt
  - name: three
    type: script
    command: 'echo $$ > waiting.tmp && mv waiting.tmp waiting; while [ ! -f go ]; do sleep 0.05; done; echo three >> count.txt'
`)
	cmd := p.command("run", "g.yaml")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return p.exists("waiting") })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	// The step's script outlives vibeteam's kill: it is stopped too, so
	// that only a resume runs step three.
	if pid, err := strconv.Atoi(strings.TrimSpace(p.read("waiting"))); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	id := onlySessionID(t, p)
	journal := strings.TrimSuffix(state.NewManager(p.dir).SessionPath(id), ".json") + ".journal"
	return id, journal
}

// TestDamagedJournalIsNeverReplayedAsWhole: a journal line in the middle
// that cannot be read (a bad sector: zeros) stops the replay there. resume
// refuses with exit 2, naming the file, the line and what it would lose;
// sessions lists it damaged, never waiting for you; show says damaged and
// why; resume --accept-damage goes on from the last whole state, saying
// which steps run again, and runs them again.
func TestDamagedJournalIsNeverReplayedAsWhole(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id, journal := killedMidway(t, p)
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	bad := -1
	for i, l := range lines {
		var c state.Change
		if json.Unmarshal(l, &c) == nil && c.RunKey == "0" && c.Run != nil && c.Run.Status == "done" {
			bad = i
			break
		}
	}
	if bad < 0 || bad+2 >= len(lines) {
		t.Fatalf("no line of step one done with lines after it in the journal:\n%s", data)
	}
	// A bad sector: the line's bytes are zeros, its length kept.
	copy(lines[bad], bytes.Repeat([]byte{0}, len(lines[bad])-1))
	if err := os.WriteFile(journal, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	p.write("go", "")

	r := p.exec("resume", id)
	wantCode(t, r, 2)
	line := ":" + itoa(bad+1)
	if !strings.Contains(r.stderr, journal+line) || !strings.Contains(r.stderr, "would lose") || !strings.Contains(r.stderr, "two (1) done") || !strings.Contains(r.stderr, "--accept-damage") {
		t.Errorf("resume does not name the file, the line (%s) and what it would lose:\n%s", line, r.stderr)
	}
	if got := p.read("count.txt"); got != "one\ntwo\n" {
		t.Errorf("a refused resume ran steps: count.txt %q", got)
	}

	r = p.exec("sessions")
	if !strings.Contains(r.stdout, "damaged") || strings.Contains(r.stdout, "waiting for you") {
		t.Errorf("sessions does not say damaged, or offers it as waiting:\n%s", r.stdout)
	}
	r = p.exec("show", id)
	if !strings.Contains(r.stdout, "damaged") || !strings.Contains(r.stdout, journal+line) || !strings.Contains(r.stdout, "--accept-damage") {
		t.Errorf("show does not say damaged and why:\n%s%s", r.stdout, r.stderr)
	}

	r = p.exec("resume", id, "--accept-damage")
	t.Logf("resume --accept-damage:\n%s", r.stderr)
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "these run again: one (0), two (1), three (2)") {
		t.Errorf("resume --accept-damage does not say which steps run again:\n%s", r.stderr)
	}
	if got := p.read("count.txt"); !strings.HasSuffix(got, "two\nthree\n") || strings.Count(got, "two") != 2 {
		t.Errorf("count.txt %q: step two was not run again from the last whole state", got)
	}
	if s := p.sessionByID(id); s.Status != state.StatusCompleted || s.Broken != nil {
		t.Errorf("after --accept-damage: status %s, broken %v", s.Status, s.Broken)
	}
}

// TestDamagedSessionFilesAreListed: a session file cut short, empty,
// holding null or not JSON is listed by sessions as damaged with the
// reason, never as waiting for you; show and resume of it say damaged
// and exit 2. A JSON object that is not a session stays unlisted.
func TestDamagedSessionFilesAreListed(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", "name: g\nsteps:\n  - name: a\n    type: script\n    command: exit 1\n")
	wantCode(t, p.exec("run", "g.yaml"), 3)
	good := onlySessionID(t, p)
	whole := p.read(".vibeteam/sessions/" + good + ".json")
	files := map[string]struct{ content, reason string }{
		"d0000001": {whole[:len(whole)/2], "cut short"},
		"d0000002": {"", "empty"},
		"d0000003": {"null\n", "null"},
		"d0000004": {"{\"id\": \x00\x00}", "not JSON"},
	}
	for id, f := range files {
		p.write(".vibeteam/sessions/"+id+".json", f.content)
	}
	p.write(".vibeteam/sessions/a0000000.json", `{"id":"a0000000","note":"not a session of vibeteam's"}`)

	r := p.exec("sessions")
	t.Logf("sessions:\n%s", r.stdout)
	wantCode(t, r, 0)
	waiting := r.stdout
	if i := strings.Index(waiting, "waiting for you"); i >= 0 {
		waiting = waiting[i:]
	} else {
		waiting = ""
	}
	for id, f := range files {
		found := false
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.Contains(l, id) && strings.Contains(l, f.reason) {
				found = true
			}
		}
		if !found {
			t.Errorf("sessions does not list %s with %q:\n%s", id, f.reason, r.stdout)
		}
		if strings.Contains(waiting, id) {
			t.Errorf("sessions offers damaged %s as waiting for you:\n%s", id, r.stdout)
		}
		for _, cmd := range []string{"show", "resume"} {
			r := p.exec(cmd, id)
			if r.code != 2 || !strings.Contains(r.stderr, "damaged") || !strings.Contains(r.stderr, f.reason) {
				t.Errorf("%s %s: exit %d, want 2 saying damaged (%s):\n%s", cmd, id, r.code, f.reason, r.stderr)
			}
		}
	}
	if strings.Contains(r.stdout, "a0000000") || !strings.Contains(r.stdout, good) {
		t.Errorf("sessions lists a stranger, or leaves out the good session:\n%s", r.stdout)
	}
	var rows []struct{ ID, Status, Damaged string }
	if err := json.Unmarshal([]byte(p.exec("sessions", "--json").stdout), &rows); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, row := range rows {
		if row.Status == "damaged" && row.Damaged != "" {
			n++
		}
	}
	if n != len(files) || len(rows) != len(files)+1 {
		t.Errorf("sessions --json: %d damaged rows of %d, want %d of %d: %+v", n, len(rows), len(files), len(files)+1, rows)
	}
}

// TestBaseDirIsARepositoryGitTakesForOne: the base directory is the
// nearest one up whose .git git takes for a repository's (a HEAD inside,
// or a "gitdir:" file); an empty .git directory above, as a tool may leave
// in the system's temporary directory, is passed over.
func TestBaseDirIsARepositoryGitTakesForOne(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	sub := filepath.Join(top, "work", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	sessionsUnder := func() string {
		t.Helper()
		cmd := exec.Command(vibeteam, "sessions")
		cmd.Dir = sub
		r := runResult(t, cmd)
		return strings.TrimSpace(r.stderr)
	}
	if err := os.Mkdir(filepath.Join(top, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := sessionsUnder(), "no sessions under "+filepath.Join(sub, ".vibeteam"); got != want {
		t.Errorf("under an empty .git directory: %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(top, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := sessionsUnder(), "no sessions under "+filepath.Join(top, ".vibeteam"); got != want {
		t.Errorf("under a repository: %q, want %q", got, want)
	}
	work := filepath.Join(top, "work")
	if err := os.WriteFile(filepath.Join(work, ".git"), []byte("gitdir: "+filepath.Join(top, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := sessionsUnder(), "no sessions under "+filepath.Join(work, ".vibeteam"); got != want {
		t.Errorf("under a worktree's .git file: %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(work, ".git"), []byte("not a link\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := sessionsUnder(), "no sessions under "+filepath.Join(top, ".vibeteam"); got != want {
		t.Errorf("a .git file without gitdir: %q, want %q", got, want)
	}
}

// TestCancelledSessionSaysWhatResumeDoes: a session stopped by vibeteam
// cancel is not offered to "continue with"; the run says it is cancelled
// and what resume would do to it, show offers no second cancel, and
// resume does what was said: the interrupted step runs again.
func TestCancelledSessionSaysWhatResumeDoes(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: g
steps:
  - name: slow
    type: script
    command: 'echo slow >> log.txt; touch started; while [ ! -f go ]; do sleep 0.05; done'
  - name: after
    type: script
    command: echo after >> log.txt
`)
	cmd := p.command("run", "g.yaml")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return p.exists("started") })
	id := onlySessionID(t, p)
	if r := p.exec("cancel", id); r.code != 0 {
		t.Fatalf("cancel: exit %d\n%s", r.code, r.stderr)
	}
	_ = cmd.Wait()
	run := errb.String()
	if strings.Contains(run, "continue with") || !strings.Contains(run, "cancelled") || !strings.Contains(run, `vibeteam resume `+id+` takes it up again where it stopped (step "slow" runs again)`) {
		t.Errorf("the cancelled run offers to continue, or does not say what resume does:\n%s", run)
	}
	if s := p.sessionByID(id); s.Status != state.StatusCancelled {
		t.Fatalf("status %s", s.Status)
	}
	if r := p.exec("show", id); strings.Contains(r.stdout, "give it up") {
		t.Errorf("show offers to cancel a cancelled session:\n%s", r.stdout)
	}
	p.write("go", "")
	wantCode(t, p.exec("resume", id), 0)
	if got := p.read("log.txt"); got != "slow\nslow\nafter\n" {
		t.Errorf("resume did not run the interrupted step again, then go on: log.txt %q", got)
	}
}
