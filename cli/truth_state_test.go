package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestNothingStartsAfterAFailedSave: once a save of the session fails (a
// full disk: a small tmpfs), no process starts any more: the next step,
// stage or task never runs (its marker, outside the full disk, is never
// written) and the run exits 1 naming the cause. Two ways to fill it: a
// step's end whose record needs more than the slack of the pages already
// written (the save fails at that end), and a task whose start needs more
// (the save of its start fails: it must come before its process starts).
func TestNothingStartsAfterAFailedSave(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	// The output is more than a step or task keeps (256 KiB): its record
	// cannot fit in what a full disk's last pages have left.
	const fill = `cat /dev/zero > filler 2>/dev/null; head -c 400000 /dev/zero | tr '\\0' x`
	// A disk filled by a step whose end fits in the pages left; the next
	// task's start (its prompt, 20 kB, is in its record) does not.
	const fillQuietly = `cat /dev/zero > filler 2>/dev/null; echo filled`
	big := " # " + strings.Repeat("x", 20000)
	marker := func(kind string) string { return filepath.Join(outside, kind+".marker") }
	startedNext := regexp.MustCompile(`task next[^\n]* started \(`)
	files := map[string]string{
		"grimoire": `name: full
steps:
  - name: fill
    type: script
    command: "` + fill + `"
  - name: next
    type: script
    command: touch ` + marker("grimoire") + `
`,
		"stages": `id: full
stages:
  - id: one
    tasks:
      - { id: fill, adapter: shell, executionMode: headless, prompt: "` + fill + `" }
  - id: two
    tasks:
      - { id: next, adapter: shell, executionMode: headless, prompt: "touch ` + marker("stages") + `" }
`,
		"stages-bigstart": `id: full
stages:
  - id: one
    tasks:
      - { id: fill, adapter: shell, executionMode: headless, prompt: "` + fillQuietly + `" }
  - id: two
    tasks:
      - { id: next, adapter: shell, executionMode: headless, prompt: "touch ` + marker("stages-bigstart") + big + `" }
`,
		"grimoire-agent-bigstart": `name: full
steps:
  - name: fill
    type: script
    command: "` + fillQuietly + `"
  - name: next
    type: agent
    adapter: shell
    spell: |
      touch ` + marker("grimoire-agent-bigstart") + big + `
`,
	}
	for kind, src := range files {
		for trial := range 3 {
			dir := t.TempDir()
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
				t.Skipf("cannot mount a tmpfs here (needs root): %v %s", err, out)
			}
			p := &project{t: t, dir: dir}
			p.write("wf.yaml", src)
			r := p.exec("run", "wf.yaml")
			if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v %s", dir, err, out)
			}
			label := kind + " trial " + itoa(trial)
			if r.code != 1 || !strings.Contains(r.stderr, "no space left on device") {
				t.Errorf("%s: exit %d, want 1 naming the full disk\n%s", label, r.code, r.stderr)
			}
			// The marker alone would miss a task stopped before it ran
			// touch; its start is on stderr.
			if _, err := os.Stat(marker(kind)); err == nil || startedNext.MatchString(r.stderr) {
				t.Fatalf("%s: the next step or task started after the save failed\n%s", label, r.stderr)
			}
		}
	}
}

// TestTwoResumesAtOnce: two resumes of one session started together: one
// runs it, the other refuses (exit 2, naming the process that has it) and
// runs nothing; the step runs once.
func TestTwoResumesAtOnce(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: g
steps:
  - name: wait
    type: script
    command: 'test -f fixed || exit 1; echo ran >> ran.txt; touch started; while [ ! -f go ]; do sleep 0.05; done'
`)
	wantCode(t, p.exec("run", "g.yaml"), 3)
	id := onlySessionID(t, p)
	p.write("fixed", "")
	a, b := p.command("resume", id), p.command("resume", id)
	var aerr, berr bytes.Buffer
	a.Stderr, b.Stderr = &aerr, &berr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	type end struct {
		code   int
		stderr string
	}
	ends := make(chan end, 2)
	for _, c := range []struct {
		cmd *exec.Cmd
		err *bytes.Buffer
	}{{a, &aerr}, {b, &berr}} {
		go func() {
			err := c.cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			ends <- end{code, c.err.String()}
		}()
	}
	// The one that lost refuses at once, while the other runs the step,
	// which waits for go.
	waitFor(t, func() bool { return p.exists("started") })
	loser := <-ends
	if loser.code != 2 || !strings.Contains(loser.stderr, "in use by pid") {
		t.Errorf("the second resume: exit %d, want 2 saying the session is in use\n%s", loser.code, loser.stderr)
	}
	p.write("go", "")
	if winner := <-ends; winner.code != 0 {
		t.Errorf("the resume that ran it: exit %d\n%s", winner.code, winner.stderr)
	}
	if got := p.read("ran.txt"); got != "ran\n" {
		t.Errorf("the step ran %q, want once", got)
	}
}
