package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

// stepEvents are a session's workflow.step.completed events, in order.
func (p *project) stepEvents(id string) []state.Event {
	var out []state.Event
	for _, e := range p.events(id) {
		if e.Kind() == events.WorkflowStepCompleted {
			out = append(out, e)
		}
	}
	return out
}

// stepTrace is "name@address:status" of each completed step, in order.
func (p *project) stepTrace(id string) string {
	var parts []string
	for _, e := range p.stepEvents(id) {
		parts = append(parts, fmt.Sprintf("%s@%s:%s", e.Fields()["name"], e.Fields()["address"], e.Fields()["status"]))
	}
	return strings.Join(parts, " ")
}

func TestGrimoireConditionsLoopsAndScope(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: scoped
steps:
  - name: setup
    type: script
    command: echo ready
  - name: quality
    type: loop
    max_iterations: 5
    steps:
      - name: first
        type: script
        # .previous on the first step of iteration N > 1 is the last step of N-1.
        command: 'echo it={{.quality.iteration}} entry={{.loop_entry.output}}{{if gt .quality.iteration 1}}; echo prev={{.previous.output}}{{end}}'
      - name: tests
        type: script
        command: test {{.quality.iteration}} -ge 3
        on_fail: continue
      - name: only-when-failing
        type: script
        when: '{{.previous.failed}}'
        command: echo failing in {{.quality.iteration}}
      - name: leave
        type: script
        when: '{{.tests.success}}'
        command: echo leaving
        on_success: exit_loop
  - name: after
    type: script
    output: final
    command: echo last={{.previous.output}} iterations={{.quality.iteration}}
  - name: report
    type: script
    command: echo {{.final.output}} > report.txt; echo {{(step "only-when-failing").output}} >> report.txt
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 0)
	s := p.only()
	if s.Status != state.StatusCompleted {
		t.Fatalf("status %s", s.Status)
	}
	want := "setup@0:done " +
		"first@1.1/0:done tests@1.1/1:failed only-when-failing@1.1/2:done leave@1.1/3:skipped " +
		"first@1.2/0:done tests@1.2/1:failed only-when-failing@1.2/2:done leave@1.2/3:skipped " +
		"first@1.3/0:done tests@1.3/1:done only-when-failing@1.3/2:skipped leave@1.3/3:done " +
		"quality@1:done after@2:done report@3:done"
	if got := p.stepTrace(s.ID); got != want {
		t.Fatalf("steps:\n got %s\nwant %s", got, want)
	}
	if got := s.Runs["1.2/0"].Output; got != "it=2 entry=ready\nprev=failing in 1" {
		t.Errorf("iteration 2's first step saw %q", got)
	}
	if got := p.read("report.txt"); got != "last=leaving iterations=3\nfailing in 2\n" {
		t.Errorf("report.txt = %q", got)
	}
	// The completed run names its failed steps: not a clean success.
	if !strings.Contains(r.stderr, "completed with 2 failed step(s): tests (1.1/1), tests (1.2/1)") {
		t.Errorf("final line does not list the failed steps:\n%s", r.stderr)
	}
	if len(s.FailedSteps) != 2 {
		t.Errorf("failedSteps = %v", s.FailedSteps)
	}
	var completed *state.Event
	for _, e := range p.events(s.ID) {
		if e.Kind() == events.WorkflowCompleted {
			completed = &e
		}
	}
	if completed == nil || completed.Fields()["failed"] != float64(2) {
		t.Errorf("workflow.completed = %+v", completed)
	}
}

func TestGrimoireMaxIterations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy string
		code   int
		status state.Status
	}{
		{"block", 3, state.StatusBlocked},
		{"exit", 0, state.StatusCompleted},
		{"continue", 0, state.StatusCompleted},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			p.write("g.yaml", fmt.Sprintf(`name: max
steps:
  - name: forever
    type: loop
    max_iterations: 2
    on_max_iterations: %s
    steps:
      - name: count
        type: script
        command: echo {{.forever.iteration}} >> count.txt
  - name: after
    type: script
    command: touch after.txt
`, tc.policy))
			r := p.exec("run", "g.yaml")
			wantCode(t, r, tc.code)
			s := p.only()
			if s.Status != tc.status {
				t.Fatalf("status %s", s.Status)
			}
			if got := p.read("count.txt"); got != "1\n2\n" {
				t.Errorf("count.txt = %q", got)
			}
			if tc.policy == "block" {
				if p.exists("after.txt") || s.BlockedReason != "max_iterations" {
					t.Errorf("blocked loop went on, or reason %q", s.BlockedReason)
				}
				if len(s.IterationSummaries) != 2 || !strings.HasPrefix(s.IterationSummaries[1], "forever iteration 2: count done") {
					t.Errorf("iteration summaries %q", s.IterationSummaries)
				}
			} else if !p.exists("after.txt") {
				t.Error("the step after the loop did not run")
			}
		})
	}
}

func TestGrimoireStrictWhen(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: strict
steps:
  - name: a
    type: script
    command: echo 1
  - name: l
    type: loop
    steps:
      - name: b
        type: script
        when: '{{.a.exit_code}}'
        command: touch b.txt
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 3)
	s := p.only()
	if s.Status != state.StatusBlocked || p.exists("b.txt") {
		t.Fatalf("status %s, b ran: %v", s.Status, p.exists("b.txt"))
	}
	for _, want := range []string{`step "b"`, "{{.a.exit_code}}", "0", "number"} {
		if !strings.Contains(s.Error, want) {
			t.Errorf("error %q does not name %q", s.Error, want)
		}
	}
}

func TestGrimoireScriptEscaping(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: esc
steps:
  - name: show
    type: script
    command: printf %s {{.x}} > out.txt
`)
	value := "a'b \"c\" $(touch pwned) `touch pwned2`; touch pwned3\nline two"
	r := p.exec("run", "g.yaml", "--set", "x="+value)
	wantCode(t, r, 0)
	if got := p.read("out.txt"); got != value {
		t.Errorf("printed %q, want %q", got, value)
	}
	for _, f := range []string{"pwned", "pwned2", "pwned3"} {
		if p.exists(f) {
			t.Errorf("%s was created: the value ran as a command", f)
		}
	}
}

// agentProject is a project whose agent steps run the fake agent headless:
// the spell's words are its commands (cat=FILE prints FILE, the final
// message with its JSON block).
func agentProject(t *testing.T) *project {
	p := newProject(t)
	p.write(".vibeteam/adapters/agent.yaml", fmt.Sprintf(`name: agent
command: %s
modes:
  headless:
    args: []
    prompt: { position: arg }
`, fakeAgent))
	p.write(".vibeteam/adapters/streamer.yaml", fmt.Sprintf(`name: streamer
command: %s
modes:
  headless:
    args: [--output-format, stream-json]
    prompt: { position: arg }
`, fakeAgent))
	return p
}

func TestGrimoireAgentOutput(t *testing.T) {
	t.Parallel()
	p := agentProject(t)
	p.write("good.md", "Done.\n\n```json\n{\"success\": true, \"summary\": \"made it\", \"outputs\": {\"branch\": \"feat/x\", \"n\": 3}}\n```\n")
	p.write("quoted.md", "Here is JSON I quote: ```json\n{\"success\": false}\n```\nand no final block\n")
	p.write("refused.md", "```json\n{\"success\": false, \"error\": \"tests do not compile\"}\n```\n")
	p.write("g.yaml", `name: agents
steps:
  - name: impl
    type: agent
    adapter: streamer
    spell: |
      streamjson=good.md
  - name: use
    type: script
    command: echo {{.impl.outputs.branch}} {{.impl.outputs.n}} {{.impl.summary}} {{.impl.success}} > used.txt
  - name: missing
    type: agent
    adapter: agent
    spell: |
      print=no_json_here
  - name: after-missing
    type: script
    command: echo {{.previous.failed}} > missing.txt
  - name: invalid
    type: agent
    adapter: agent
    spell: |
      cat=quoted.md
  - name: refused
    type: agent
    adapter: agent
    spell: |
      cat=refused.md
  - name: crashed
    type: agent
    adapter: agent
    spell: |
      cat=good.md exit=2
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 0)
	s := p.only()
	if got := p.read("used.txt"); got != "feat/x 3 made it true\n" {
		t.Errorf("used.txt = %q", got)
	}
	if got := p.read("missing.txt"); got != "true\n" {
		t.Errorf("missing.txt = %q", got)
	}
	runs := map[string]*state.StepRun{}
	for _, r := range s.Runs {
		runs[r.Name] = r
	}
	for name, want := range map[string]string{
		"missing": "agent output did not contain a valid JSON block",
		"invalid": "agent output did not contain a valid JSON block",
		"refused": "tests do not compile",
		"crashed": "exit code 2",
	} {
		if r := runs[name]; r == nil || r.Status != "failed" || !strings.Contains(r.Reason, want) {
			t.Errorf("%s: %+v, want failed with %q", name, r, want)
		}
	}
	if runs["missing"].LogPath == "" || !strings.Contains(readFile(t, runs["missing"].LogPath), "no json here") {
		t.Errorf("the missing step's text is not in its log %q", runs["missing"].LogPath)
	}
	if !strings.Contains(r.stderr, "completed with 4 failed step(s)") {
		t.Errorf("final line:\n%s", r.stderr)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGrimoireAgentOnFailBlockThenResumeSet(t *testing.T) {
	t.Parallel()
	p := agentProject(t)
	p.write("g.yaml", `name: blocking
steps:
  - name: before
    type: script
    command: echo x >> before.txt
  - name: gate
    type: script
    command: 'echo checking {{.ready}}; echo "--- FAIL: TestGate"; test {{.ready}} = yes'
  - name: after
    type: script
    command: touch after.txt
`)
	r := p.exec("run", "g.yaml", "--set", "ready=no")
	wantCode(t, r, 3)
	s := p.only()
	if s.Status != state.StatusBlocked || s.BlockedReason != "step_failed" || s.BlockedStep != "gate" {
		t.Fatalf("status %s reason %q step %q", s.Status, s.BlockedReason, s.BlockedStep)
	}
	if !strings.Contains(s.BlockedContext, "--- FAIL: TestGate") || !strings.Contains(r.stderr, "--- FAIL: TestGate") {
		t.Errorf("blocked context %q / stderr %s", s.BlockedContext, r.stderr)
	}
	show := p.exec("show", s.ID)
	for _, want := range []string{"blocked", "step_failed", "gate", "--- FAIL: TestGate", "vibeteam resume " + s.ID} {
		if !strings.Contains(show.stdout+show.stderr, want) {
			t.Errorf("show does not say %q:\n%s", want, show.stdout)
		}
	}
	r = p.exec("resume", s.ID, "--set", "ready=yes")
	wantCode(t, r, 0)
	if got := p.read("before.txt"); got != "x\n" {
		t.Errorf("a finished step ran again: before.txt = %q", got)
	}
	if !p.exists("after.txt") {
		t.Error("the grimoire did not go on after the blocked step")
	}
	s = p.only()
	if s.Runs["1"].Attempts != 2 || s.Runs["1"].Status != "done" {
		t.Errorf("blocked step run: %+v", s.Runs["1"])
	}
}

func TestGrimoireTimeouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, reason string
	}{
		{"script", `name: t
steps:
  - name: slow
    type: script
    timeout: 300ms
    command: echo started; sleep 30
`, "step_failed"},
		{"agent", `name: t
steps:
  - name: slow
    type: agent
    adapter: agent
    on_fail: block
    timeout: 300ms
    spell: |
      print=started sleep=30s
`, "step_failed"},
		{"workflow", `name: t
timeout: 500ms
steps:
  - name: slow
    type: script
    timeout: 1m
    command: echo started; sleep 30
`, "timeout"},
		{"loop", `name: t
steps:
  - name: l
    type: loop
    timeout: 500ms
    max_iterations: 1000
    steps:
      - name: tick
        type: script
        command: sleep 0.1
`, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := agentProject(t)
			p.write("g.yaml", tc.yaml)
			r := p.exec("run", "g.yaml", "--grace", "500ms")
			wantCode(t, r, 3)
			s := p.only()
			if s.Status != state.StatusBlocked || string(s.BlockedReason) != tc.reason {
				t.Fatalf("status %s reason %q: %s", s.Status, s.BlockedReason, r.stderr)
			}
			if tc.reason == "step_failed" && !strings.Contains(s.Error, "timed out after 300ms") {
				t.Errorf("error %q", s.Error)
			}
		})
	}
}

func TestGrimoireStageInLoopAndSystemPrompt(t *testing.T) {
	t.Parallel()
	p := agentProject(t)
	p.write(".vibeteam/system-prompt.md", "SYSTEM-MARK {{.spell_content}} END-MARK\n")
	p.write(".vibeteam/spells/worker.md", "record=prompt{{.n}}.json {{include \"part.md\" \"who\" .goal}}\n")
	p.write(".vibeteam/spells/part.md", "print=hello_{{.who}} cat=ok.md\n")
	p.write("ok.md", "```json\n{\"success\": true}\n```\n")
	p.write("g.yaml", `name: staged
steps:
  - name: l
    type: loop
    max_iterations: 2
    on_max_iterations: exit
    steps:
      - name: fanout
        type: stage
        tasks:
          - { id: a, adapter: fake, executionMode: headless, prompt: "write=a{{.l.iteration}}.txt:x" }
          - { id: b, adapter: fake, executionMode: headless, prompt: "write=b{{.l.iteration}}.txt:x" }
      - name: agent
        type: agent
        adapter: agent
        spell: worker
        input:
          n: "{{.l.iteration}}"
`)
	r := p.exec("run", "g.yaml", "--set", "goal=world")
	wantCode(t, r, 0)
	for _, f := range []string{"a1.txt", "b1.txt", "a2.txt", "b2.txt"} {
		if !p.exists(f) {
			t.Errorf("%s missing: the stage did not run in each iteration", f)
		}
	}
	var rec struct{ Argv []string }
	readJSON(t, p.path("prompt2.json"), &rec)
	prompt := strings.Join(rec.Argv, " ")
	for _, want := range []string{"SYSTEM-MARK", "END-MARK", "print=hello_world"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt %q lacks %q", prompt, want)
		}
	}
}

func TestGrimoireChangedFiles(t *testing.T) {
	t.Parallel()
	p := agentProject(t)
	gitInit(t, p.dir)
	p.write("ok.md", "```json\n{\"success\": true}\n```\n")
	p.write("dirty.txt", "before\n")
	p.write("g.yaml", `name: changes
steps:
  - name: impl
    type: agent
    adapter: agent
    spell: |
      write=new.txt:hello cat=ok.md
  - name: list
    type: script
    command: echo {{.impl.changed_files}} > files.txt
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 0)
	if got := p.read("files.txt"); got != "[\"new.txt\"]\n" {
		t.Errorf("changed_files = %q", got)
	}
}

func execGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "root"},
	} {
		cmd := execGit(dir, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte(".vibeteam/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGrimoireNestedLoopsAndIncludeCycle(t *testing.T) {
	t.Parallel()
	p := agentProject(t)
	p.write("g.yaml", `name: nested
steps:
  - name: start
    type: script
    command: echo start
  - name: outer
    type: loop
    max_iterations: 2
    on_max_iterations: exit
    steps:
      - name: inner
        type: loop
        max_iterations: 2
        on_max_iterations: continue
        steps:
          - name: cell
            type: script
            command: echo {{.outer.iteration}}.{{.inner.iteration}} entry={{.loop_entry.output}} >> cells.txt; echo cell{{.outer.iteration}}{{.inner.iteration}}
      - name: row
        type: script
        # Its output is .loop_entry of the inner loop in the next iteration.
        command: echo row{{.outer.iteration}} after {{.previous.output}} | tee -a cells.txt
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 0)
	want := "1.1 entry=start\n1.2 entry=start\nrow1 after cell12\n2.1 entry=row1 after cell12\n2.2 entry=row1 after cell12\nrow2 after cell22\n"
	if got := p.read("cells.txt"); got != want {
		t.Errorf("cells.txt:\n%s\nwant\n%s", got, want)
	}
	s := p.only()
	if s.Runs["1.2/0.2/0"] == nil || s.Runs["1.2/0.2/0"].Output != "cell22" {
		t.Errorf("run at 1.2/0.2/0: %+v", s.Runs["1.2/0.2/0"])
	}

	// An include cycle is found before anything runs.
	p.write("cycle.yaml", `name: cycle
steps:
  - name: first
    type: script
    command: touch ran.txt
  - name: looped
    type: agent
    adapter: agent
    spell: self
`)
	p.write(".vibeteam/spells/self.md", "again {{include \"self.md\"}}\n")
	r = p.exec("run", "cycle.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "cycle.yaml:9:") || !strings.Contains(r.stderr, "include cycle: self.md -> self.md") || p.exists("ran.txt") {
		t.Errorf("include cycle not refused up front:\n%s", r.stderr)
	}
}

// An interactive agent step runs in a terminal with the automation; its
// transcript holds the prompt (and the system prompt's example block),
// which must never pass for the agent's own result.
func TestGrimoireInteractiveAgentStep(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: tui
steps:
  - name: chat
    type: agent
    adapter: tui
    executionMode: interactive
    spell: |
      say hello
  - name: after
    type: script
    command: echo {{.chat.failed}} > after.txt
`)
	r := p.exec("run", "g.yaml", "--auto-approve")
	wantCode(t, r, 0)
	s := p.only()
	run := s.Runs["0"]
	if run == nil || run.Status != "failed" || run.Reason != "agent output did not contain a valid JSON block" {
		t.Fatalf("chat run: %+v\n%s", run, r.stderr)
	}
	if !strings.Contains(p.read("rec.txt"), "say hello") {
		t.Errorf("the TUI did not get the spell: %q", p.read("rec.txt"))
	}
	if got := p.read("after.txt"); got != "true\n" {
		t.Errorf("after.txt = %q", got)
	}
}

// Ctrl-C in the middle of a script step stops its whole process group,
// saves the step as stopped, exits 130; resume runs it again (and only it).
func TestGrimoireInterruptThenResume(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", `name: interrupted
steps:
  - name: first
    type: script
    command: echo x >> first.txt
  - name: slow
    type: script
    command: echo $$ > slow.pid; sleep 60 & echo $! > child.pid; wait; touch slow-done
`)
	cmd := p.command("run", "g.yaml", "--grace", "500ms")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return p.exists("child.pid") })
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, errb.String())
	}
	pidAlive(t, p.read("slow.pid"), false)
	pidAlive(t, p.read("child.pid"), false)
	s := p.only()
	if s.Status != state.StatusCancelled || s.Runs["1"].Status != "stopped" || s.Cursor != "1" {
		t.Fatalf("status %s, run %+v, cursor %q", s.Status, s.Runs["1"], s.Cursor)
	}
	p.write("g.yaml", strings.Replace(p.read("g.yaml"), "sleep 60 &", "sleep 0 &", 1))
	r := p.exec("resume", s.ID, "--reload")
	wantCode(t, r, 0)
	if got := p.read("first.txt"); got != "x\n" || !p.exists("slow-done") {
		t.Errorf("first.txt %q, slow-done %v", got, p.exists("slow-done"))
	}
}
