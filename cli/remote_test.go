package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// remoteUpdateHook is the bare remote's update hook: it logs every ref
// update ("REF OLD NEW") and refuses, logging NONFF, one that is not a
// fast-forward (a force push), which receive.denyNonFastForwards refuses
// too.
const remoteUpdateHook = `#!/bin/sh
log=%s
zero=0000000000000000000000000000000000000000
echo "$1 $2 $3" >> "$log"
if [ "$2" != "$zero" ] && [ "$3" != "$zero" ] && ! git merge-base --is-ancestor "$2" "$3"; then
	echo "NONFF $1 $2 $3" >> "$log"
	exit 1
fi
`

// twoMachines is one backlog of n beads, a bare remote, and two clones of
// it (two machines) sharing one fake bd database. The gate logs the tree
// it sees in gateLog; the remote's hook logs every ref update in pushLog.
type twoMachines struct {
	t                 *testing.T
	a, b              *beadProject
	bare              string
	workLog, gateLog  string
	pushLog           string
	env               []string
	machines          []*beadProject
	actors            []string
	bdLog             string
	beadIDs           []string
	grimoire, configY string
}

func newTwoMachines(t *testing.T, n int) *twoMachines {
	t.Helper()
	var list []map[string]any
	var ids []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("bd-%d", i)
		ids = append(ids, id)
		list = append(list, bead(id, fmt.Sprintf("Bead %d", i), nil))
	}
	a, workLog := newBacklogProject(t, list...)
	dir := t.TempDir()
	m := &twoMachines{t: t, a: a, workLog: workLog, beadIDs: ids,
		bare: filepath.Join(dir, "remote.git"), gateLog: filepath.Join(dir, "gate.log"), pushLog: filepath.Join(dir, "push.log")}
	m.grimoire = strings.Replace(backlogGrimoire, "require_review: false", "require_review: false\n    gate: true", 1)
	gate := fmt.Sprintf("git rev-parse HEAD^{tree} >> %s; sleep 0.05", m.gateLog)
	m.configY = "grimoires:\n  default: ship\nmerge:\n  gate: " + yamlQuote(gate) + "\n"
	a.write(".vibeteam/grimoires/ship.yaml", m.grimoire)
	a.write(".vibeteam/config.yaml", m.configY)
	mustGit(t, dir, "clone", "-q", "--bare", a.dir, m.bare)
	mustGit(t, m.bare, "config", "receive.denyNonFastForwards", "true")
	hook := filepath.Join(m.bare, "hooks", "update")
	if err := os.WriteFile(hook, []byte(fmt.Sprintf(remoteUpdateHook, m.pushLog)), 0o755); err != nil {
		t.Fatal(err)
	}
	a.git("remote", "add", "origin", m.bare)
	a.git("fetch", "-q", "origin")

	// The root commit holds the fake adapters; the grimoire and config
	// are written in each clone.
	b := &beadProject{project: &project{t: t, dir: filepath.Join(dir, "machine-b")}, db: a.db, log: a.log}
	mustGit(t, dir, "clone", "-q", m.bare, b.dir)
	b.write(".vibeteam/grimoires/ship.yaml", m.grimoire)
	b.write(".vibeteam/config.yaml", m.configY)
	m.b = b
	m.machines, m.actors = []*beadProject{a, b}, []string{"machine-a", "machine-b"}
	return m
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@u"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// start starts vibeteam on machine k (0 or 1) with args, in a process
// group of its own.
func (m *twoMachines) start(k int, args ...string) *execution {
	m.t.Helper()
	p := m.machines[k]
	cmd := p.command(args...)
	cmd.Env = append(cmd.Env, "PATH="+fakeBDDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKEBD_DB="+p.db, "FAKEBD_LOG="+p.log, "BEADS_ACTOR="+m.actors[k])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	e := &execution{}
	cmd.Stderr = &e.stderr
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	e.cmd = cmd
	return e
}

func (m *twoMachines) readyArgs() []string {
	return []string{"run", "--ready", "--remote", "origin", "--jobs", "2", "--headless", "--set", "log=" + m.workLog, "--set", "pause=0.1"}
}

// check asserts what two machines on one backlog must leave: each bead
// worked once, landed once on the remote, closed; no force push; every
// tree the remote's main took passed the gate.
func (m *twoMachines) check(stderr string) {
	t := m.t
	t.Helper()
	// Worked once: one start line each in the shared work log.
	starts := map[string]int{}
	for _, l := range workLog(t, m.workLog) {
		if l[0] == "start" {
			starts[l[1]]++
		}
	}
	// Landed once on the remote.
	merges := map[string]int{}
	for _, l := range strings.Split(mustGit(t, m.bare, "log", "main", "--merges", "--format=%b"), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "Bead "); ok {
			id, _, _ := strings.Cut(rest, ",")
			merges[id]++
		}
	}
	db := map[string]map[string]any{}
	readJSON(t, m.a.db, &db)
	for _, id := range m.beadIDs {
		if merges[id] != 1 {
			t.Errorf("%s landed %d times on the remote, want 1 (all: %v)\n%s", id, merges[id], merges, stderr)
		}
		if starts[id] < 1 {
			t.Errorf("%s was never worked", id)
		}
		if st := db[id]["status"]; st != "closed" {
			t.Errorf("%s is %v in bd, want closed", id, st)
		}
	}
	// No force push: the hook saw no update that was not a fast-forward.
	pushes, _ := os.ReadFile(m.pushLog)
	if strings.Contains(string(pushes), "NONFF") {
		t.Errorf("a push that was not a fast-forward reached the remote:\n%s", pushes)
	}
	// Every tree main took passed the gate.
	gated, _ := os.ReadFile(m.gateLog)
	seen := map[string]bool{}
	for _, tree := range strings.Fields(string(gated)) {
		seen[tree] = true
	}
	landed := 0
	for _, l := range strings.Split(strings.TrimSpace(string(pushes)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "refs/heads/main" {
			continue
		}
		landed++
		if tree := mustGit(t, m.bare, "rev-parse", f[2]+"^{tree}"); !seen[tree] {
			t.Errorf("main took %s, whose tree %s no gate saw", f[2], tree)
		}
	}
	if landed == 0 {
		t.Errorf("no push reached the remote's main:\n%s", pushes)
	}
}

// Two machines work one backlog of 10 beads through one remote, at once:
// each bead is claimed by one of them (the other skips it), worked once,
// landed once on the remote's main, as a fast-forward of what its gate
// saw, and closed after.
func TestTwoMachinesOneBacklogOneRemote(t *testing.T) {
	t.Parallel()
	m := newTwoMachines(t, 10)
	ea, eb := m.start(0, m.readyArgs()...), m.start(1, m.readyArgs()...)
	errA, errB := ea.cmd.Wait(), eb.cmd.Wait()
	stderr := "machine a:\n" + ea.stderr.String() + "\nmachine b:\n" + eb.stderr.String()
	if errA != nil || errB != nil {
		for _, p := range m.machines {
			for _, s := range p.beadSessions() {
				if s.Status != state.StatusCompleted {
					t.Logf("%s: %s %s %s", s.ID, s.Status, s.Error, s.BlockedContext)
				}
			}
		}
		t.Fatalf("a: %v, b: %v\n%s", errA, errB, stderr)
	}
	m.check(stderr)
	// Both machines worked beads, each its own: a bead one completed the
	// other skipped or never took.
	done := map[string]string{}
	for k, p := range m.machines {
		n := 0
		for id, s := range p.beadSessions() {
			if s.Status != state.StatusCompleted {
				continue
			}
			n++
			if other, ok := done[id]; ok {
				t.Errorf("%s completed on %s and %s", id, other, m.actors[k])
			}
			done[id] = m.actors[k]
			if s.Remote != "origin" || s.Merged == "" {
				t.Errorf("%s on %s: remote %q, merged %q", id, m.actors[k], s.Remote, s.Merged)
			} else if out, err := exec.Command("git", "-C", m.bare, "merge-base", "--is-ancestor", s.Merged, "main").CombinedOutput(); err != nil {
				t.Errorf("%s's merge commit %s is not on the remote's main: %v %s", id, s.Merged, err, out)
			}
		}
		if n == 0 {
			t.Errorf("%s completed no bead:\n%s", m.actors[k], stderr)
		}
	}
	if len(done) != 10 {
		t.Errorf("%d beads completed, want 10: %v", len(done), done)
	}
}

// Two machines, one of them killed (kill -9, its whole process group) at
// random moments and resumed until it completes: no bead lands twice or
// is lost, none is left claimed, and no push was forced.
func TestTwoMachinesKilledAndResumed(t *testing.T) {
	t.Parallel()
	rng := crashRand(t, 31)
	kills := 0
	for trial := range 3 {
		kills += m2Trial(t, trial, rng)
	}
	t.Logf("%d kills in 3 trials", kills)
	if kills < 3 {
		t.Errorf("only %d kills in 3 trials", kills)
	}
}

// m2Trial is one kill trial of two machines: machine a is killed, within
// its first seconds and then sometimes again while it resumes; machine b
// runs to its end. It returns the kills.
func m2Trial(t *testing.T, trial int, rng *rand.Rand) int {
	m := newTwoMachines(t, 10)
	eb := m.start(1, m.readyArgs()...)
	kills := 0
	var id string
	var log strings.Builder
	for attempt := 0; ; attempt++ {
		if attempt > 10 {
			t.Fatalf("trial %d: machine a not completed after %d resumes\n%s", trial, attempt, log.String())
		}
		var e *execution
		if id == "" {
			e = m.start(0, m.readyArgs()...)
		} else {
			e = m.start(0, "resume", id, "--headless")
		}
		killed := false
		if attempt == 0 || rng.IntN(2) == 0 {
			at := time.Duration(300+rng.IntN(2500)) * time.Millisecond
			timer := time.AfterFunc(at, func() { _ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL) })
			_ = e.cmd.Wait()
			killed = !timer.Stop()
		} else {
			_ = e.cmd.Wait()
		}
		fmt.Fprintf(&log, "attempt %d (killed %v):\n%s\n", attempt, killed, e.stderr.String())
		if id == "" {
			for _, s := range m.a.sessions() {
				if s.Backlog != nil {
					id = s.ID
				}
			}
			if id == "" {
				if killed {
					// Killed before its backlog was saved: start again.
					kills++
					continue
				}
				t.Fatalf("trial %d: no backlog session\n%s", trial, log.String())
			}
		}
		if killed {
			kills++
			continue
		}
		if e.cmd.ProcessState.ExitCode() == 0 {
			break
		}
		// Exit 3/1 after a kill left a bead to look at: resume again.
	}
	if err := eb.cmd.Wait(); err != nil {
		t.Fatalf("trial %d: machine b: %v\n%s", trial, err, eb.stderr.String())
	}
	m.check(log.String() + "\nmachine b:\n" + eb.stderr.String())
	db := map[string]map[string]any{}
	readJSON(t, m.a.db, &db)
	for id, is := range db {
		if is["status"] != "closed" {
			t.Errorf("trial %d: %s left %v, assigned to %v", trial, id, is["status"], is["assignee"])
		}
	}
	return kills
}

// --remote names one of the repository's remotes, and goes with --ready:
// anything else is exit 2, saying so, before a bead is touched.
func TestReadyRemoteRefusesBadInput(t *testing.T) {
	t.Parallel()
	p, _ := newBacklogProject(t, bead("bd-1", "One", nil))
	p.git("remote", "add", "upstream", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--ready", "--remote", "origin"}, "no remote origin in " + p.dir + "; its remotes: upstream"},
		{[]string{"run", "--ready", "--remote", "-x"}, `"-x" is not a remote's name`},
		{[]string{"run", "--remote", "upstream", "ship"}, "--remote goes with --ready"},
	} {
		r := p.bdExec(c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 saying %q:\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
	if calls := p.bdCalls(); len(calls) > 0 {
		t.Errorf("bd was called: %v", calls)
	}
}

// A backlog killed after it claimed a bead and before that bead's session
// existed, then cancelled: the claim is given back (open, nobody's), so
// another machine may take it; a bead another machine claimed meanwhile
// keeps its claim.
func TestCancelBacklogReleasesAClaimWithoutSession(t *testing.T) {
	t.Parallel()
	p, _ := newBacklogProject(t,
		map[string]any{"id": "bd-1", "title": "Mine", "status": "in_progress", "assignee": "tester", "issue_type": "task", "priority": 2},
		map[string]any{"id": "bd-2", "title": "Theirs", "status": "in_progress", "assignee": "machine-b", "issue_type": "task", "priority": 2})
	mgr := state.NewManager(p.dir)
	sess := &state.Session{ID: "0123abcd", Workflow: "backlog", Status: state.StatusRunning, BaseDir: p.dir, StartTime: time.Now(),
		Tasks: map[string]*state.TaskRecord{}, TaskStatus: map[string]state.TaskStatus{},
		Backlog: &state.Backlog{Jobs: 2, Remote: "origin", Beads: []*state.BacklogBead{
			{ID: "bd-1", Grimoire: "ship", Session: "11111111", Status: state.BeadStarting},
			{ID: "bd-2", Grimoire: "ship", Session: "22222222", Status: state.BeadStarting},
		}}}
	if err := mgr.Save(sess); err != nil {
		t.Fatal(err)
	}
	wantCode(t, p.bdExec("cancel", sess.ID), 0)
	db := map[string]map[string]any{}
	readJSON(t, p.db, &db)
	if b := db["bd-1"]; b["status"] != "open" || b["assignee"] != "" {
		t.Errorf("bd-1 (ours): status %v, assignee %v; want open, nobody's", b["status"], b["assignee"])
	}
	if b := db["bd-2"]; b["status"] != "in_progress" || b["assignee"] != "machine-b" {
		t.Errorf("bd-2 (another's): status %v, assignee %v; want in_progress, machine-b's", b["status"], b["assignee"])
	}
}
