package cli

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// killGrimoire has a three-iteration loop whose steps read .previous and
// .loop_entry, so a resume that replayed the scope wrongly writes a
// different trace.
const killGrimoire = `name: crashy
steps:
  - name: setup
    type: script
    command: echo setup
  - name: l
    type: loop
    max_iterations: 3
    on_max_iterations: exit
    steps:
      - name: a
        type: script
        command: sleep 0.04; echo a{{.l.iteration}}
      - name: b
        type: script
        command: 'sleep 0.04; echo b{{.l.iteration}}-after-{{.previous.output}}-entry-{{.loop_entry.output}}'
      - name: c
        type: script
        when: '{{ne .b.output ""}}'
        command: echo c{{.l.iteration}}-{{.previous.output}} >> trace.txt; echo c{{.l.iteration}}
  - name: final
    type: script
    command: echo final-{{.previous.output}}-{{.l.iteration}} >> trace.txt
`

// TestKill9MidLoopThenResume kills vibeteam (SIGKILL, no chance to save) at
// random points of a grimoire with a three-iteration loop, resumes until it
// completes, and checks that no finished step ran again (a
// workflow.step.started after that address's workflow.step.completed) and
// nothing was lost (every run done, the trace as an uninterrupted run writes
// it).
func TestKill9MidLoopThenResume(t *testing.T) {
	t.Parallel()
	const trials = 24
	want := "c1-b1-after-a1-entry-setup\nc2-b2-after-a2-entry-setup\nc3-b3-after-a3-entry-setup\nfinal-c3-3\n"
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	kills, reruns := 0, 0
	for trial := 0; trial < trials; trial++ {
		p := newProject(t)
		p.write("g.yaml", killGrimoire)
		id := ""
		for attempt := 0; ; attempt++ {
			args := []string{"run", "g.yaml"}
			if id != "" {
				args = []string{"resume", id}
			}
			cmd := p.command(args...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			if attempt < 4 {
				// The steps sleep 240 ms in all: the first run is always
				// killed, the next ones anywhere or not at all.
				delay := time.Duration(20+rng.IntN(200)) * time.Millisecond
				if attempt > 0 {
					delay = time.Duration(rng.IntN(350)) * time.Millisecond
				}
				select {
				case err = <-done:
				case <-time.After(delay):
					_ = cmd.Process.Signal(syscall.SIGKILL)
					err = <-done
					kills++
				}
			} else {
				err = <-done
			}
			if id == "" {
				id = onlySessionID(t, p)
				if id == "" {
					continue // killed before the session was saved: run again
				}
			}
			if err == nil {
				break
			}
			if ee, ok := err.(interface{ ExitCode() int }); ok && ee.ExitCode() != -1 {
				t.Fatalf("trial %d: exit %d\n%s", trial, ee.ExitCode(), errb.String())
			}
			if attempt > 10 {
				t.Fatalf("trial %d: never completed", trial)
			}
		}
		s := p.only()
		if s.Status != state.StatusCompleted {
			t.Fatalf("trial %d: status %s", trial, s.Status)
		}
		// A step killed after its command ran but before its end was
		// recorded has not finished: it runs again, and its line shows
		// twice in a row. Anything else out of order is a lost or wrongly
		// replayed step.
		if got := collapseRepeats(p.read("trace.txt")); got != want {
			t.Errorf("trial %d: trace\n%s\nwant\n%s", trial, got, want)
		}
		for _, k := range []string{"0", "1", "1.1/0", "1.1/1", "1.1/2", "1.2/0", "1.3/2", "2"} {
			if r := s.Runs[k]; r == nil || r.Status != "done" {
				t.Errorf("trial %d: run %s lost: %+v", trial, k, r)
			}
		}
		finished := map[string]bool{}
		for _, e := range p.events(id) {
			addr, _ := e.Fields()["address"].(string)
			switch e.Kind() {
			case events.WorkflowStepCompleted:
				if st := e.Fields()["status"]; st == "done" || st == "failed" || st == "skipped" {
					finished[addr] = true
				}
			case events.WorkflowStepStarted:
				if finished[addr] && e.Fields()["type"] != "loop" {
					reruns++
					t.Errorf("trial %d: finished step %s@%s ran again", trial, e.Fields()["name"], addr)
				}
			}
		}
	}
	t.Logf("%d trials, %d kills, %d finished steps re-run", trials, kills, reruns)
	if kills < trials {
		t.Errorf("only %d kills in %d trials: the test did not exercise resume", kills, trials)
	}
}

func onlySessionID(t *testing.T, p *project) string {
	t.Helper()
	matches, _ := filepath.Glob(p.path(".vibeteam/sessions/*.json"))
	for _, m := range matches {
		if _, err := os.Stat(m); err == nil {
			return strings.TrimSuffix(filepath.Base(m), ".json")
		}
	}
	return ""
}

// collapseRepeats drops lines equal to the line before.
func collapseRepeats(text string) string {
	var out []string
	for _, l := range strings.SplitAfter(text, "\n") {
		if len(out) == 0 || out[len(out)-1] != l {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// A stage's only task's end goes on the line of the stage's end: killed in
// the next stage, the journal holds both on one line, and resume neither
// runs the finished stage's task again nor loses what it recorded.
func TestStageEndCarriesItsTaskEnd(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("wf.yaml", `id: two
stages:
  - id: first
    tasks:
      - { id: once, adapter: shell, executionMode: headless, prompt: "echo ran >> once.t" }
  - id: second
    tasks:
      - { id: waits, adapter: shell, executionMode: headless, prompt: "test -f go || (echo $$ > waits.pid; sleep 60)" }
`)
	cmd := p.command("run", "wf.yaml")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return p.exists("waits.pid") })
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	list, err := state.NewManager(p.dir).List()
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions %v, %v", list, err)
	}
	id := list[0].ID
	journal, err := os.ReadFile(filepath.Join(p.dir, ".vibeteam", "sessions", id+".journal"))
	if err != nil {
		t.Fatal(err)
	}
	var together bool
	for _, line := range strings.Split(strings.TrimSpace(string(journal)), "\n") {
		var c state.Change
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if c.Task == "once" && c.Status == state.TaskDone {
			together = c.RunKey == "0" && c.Run != nil && c.Run.Status == "done"
			if !together {
				t.Errorf("the task's end without the stage's: %s", line)
			}
		}
	}
	if !together {
		t.Errorf("no journal line with the first stage's task DONE:\n%s", journal)
	}
	p.write("go", "")
	r := p.exec("resume", id, "--grace", "1s")
	wantCode(t, r, 0)
	s := p.only()
	if p.lines("once.t") != 1 || s.TaskStatus["once"] != state.TaskDone || s.Tasks["once"].ExitCode == nil || s.Runs["0"].Status != "done" {
		t.Errorf("after resume: the first task ran %d time(s); status %s, record %+v, run %+v\n%s", p.lines("once.t"), s.TaskStatus["once"], s.Tasks["once"], s.Runs["0"], r.stderr)
	}
}
