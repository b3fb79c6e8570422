package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A sandbox: block on a loop reaches the steps inside it, and one on a
// stage step reaches its tasks: their writes to the paths it lists go
// through.
func TestALoopsAndAStagesSandboxReachTheStepsInside(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	loopDir, stageDir := filepath.Join(h.home, "loop-cache"), filepath.Join(h.home, "stage-cache")
	for _, d := range []string{loopDir, stageDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.write(".vibeteam/grimoires/nested.yaml", strings.NewReplacer("LOOP", loopDir, "STAGE", stageDir).Replace(`name: nested
steps:
  - name: l
    type: loop
    max_iterations: 1
    sandbox: {write: [LOOP]}
    steps:
      - name: build
        type: script
        command: echo built > LOOP/out.txt
        on_success: exit_loop
  - name: s
    type: stage
    sandbox: {write: [STAGE]}
    tasks:
      - { id: t, adapter: fake, executionMode: headless, prompt: "write=STAGE/out.txt:made" }
`))
	r := h.run("run", "nested", "--sandbox")
	wantCode(t, r, 0)
	if s := h.only(); s.Sandbox == nil {
		t.Fatal("the run was not sandboxed")
	}
	for path, want := range map[string]string{filepath.Join(loopDir, "out.txt"): "built\n", filepath.Join(stageDir, "out.txt"): "made"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s holds %q (%v), want %q\nstderr:\n%s", path, b, err, want, r.stderr)
		}
	}
}

// A step's own network and allow: are what its process gets from the
// proxy: with the workflow's allow: a script step reaches the port, one
// with network: none does not (its refusal is in the log), and one that
// allows a port the workflow does not reaches it.
func TestAStepsOwnNetworkIsWhatTheProxyLetsThrough(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	hostile := fmt.Sprintf("hostile -base %s -addr", h.dir)
	h.write(".vibeteam/grimoires/net.yaml", strings.NewReplacer("ADDR", h.addr, "OTHER", other.Addr().String(), "HOSTILE", hostile).Replace(`name: net
sandbox: {allow: ["ADDR"]}
steps:
  - name: open
    type: script
    command: HOSTILE ADDR -report open.txt >/dev/null
  - name: closed
    type: script
    sandbox: {network: none}
    command: HOSTILE ADDR -report closed.txt >/dev/null
  - name: more
    type: script
    sandbox: {allow: ["OTHER"]}
    command: HOSTILE OTHER -report more.txt >/dev/null
`))
	r := h.run("run", "net", "--sandbox")
	wantCode(t, r, 0)
	through := func(addr string) string { return "connect " + addr + " through the proxy: " }
	for file, want := range map[string]string{
		"open.txt":   through(h.addr) + "escaped: tunnel open",
		"closed.txt": through(h.addr) + "held: the proxy answered HTTP/1.1 403",
		"more.txt":   through(other.Addr().String()) + "escaped: tunnel open",
	} {
		if got := h.read(file); !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", file, want, got)
		}
	}
	if lg := h.exec("log", h.only().ID); !strings.Contains(lg.stdout, "sandbox refused a connection to 127.0.0.1:"+h.addr[strings.LastIndexByte(h.addr, ':')+1:]+" (sandbox network is none)") {
		t.Errorf("log does not name the refused host:\n%s", lg.stdout)
	}
}

// sandboxGrimoire has a workflow allow:, a script step's own write:, a
// loop's network: none (reaching the agent step and the stage task inside
// it) and a merge gate.
const sandboxGrimoire = `name: g
sandbox: {allow: [proxy.golang.org:443]}
steps:
  - name: build
    type: script
    sandbox: {write: [~/cache, out]}
    command: make
  - name: l
    type: loop
    sandbox: {network: none}
    steps:
      - name: impl
        type: agent
        adapter: fake
        spell: |
          do it
      - name: s
        type: stage
        tasks:
          - { id: t, adapter: fake, executionMode: headless, prompt: hi }
  - name: merge
    type: merge
    gate: go test ./...
`

// validate shows, for a file that is ok, whether a run is sandboxed and
// why, what every process gets, and each step's, task's and gate's own
// writable paths and network, the loop's block reaching inside it.
func TestValidateShowsTheSandboxOfEachStep(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", sandboxGrimoire)
	home := t.TempDir()
	validate := func(env ...string) result {
		cmd := p.command("validate", "g.yaml")
		cmd.Env = append(withoutEnv(withoutEnv(cmd.Env, "VIBETEAM_SANDBOX"), "HOME"), append(env, "HOME="+home)...)
		return runResult(t, cmd)
	}
	r := validate()
	wantCode(t, r, 0)
	on := "  sandbox: on (the sandbox: block of g.yaml)"
	if _, err := exec.LookPath("bwrap"); err != nil {
		on += ", but bubblewrap (bwrap) is not installed"
	}
	for _, want := range []string{
		"g.yaml: ok (grimoire, 5 steps)\n",
		on,
		"    writable: the base directory " + p.dir + ", a private /tmp, ",
		"    never visible: ~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gh, ~/.netrc, ~/.docker, ~/.kube\n",
		"    step build (script, line 4): write the work dir, ~/cache, " + p.path("out") + "; network allow: proxy.golang.org:443\n",
		"    step impl (agent fake, line 12): write the work dir; network none (the model routes only)\n",
		"    step s task t (fake, line 20): write the work dir; network none (the model routes only)\n",
		"    step merge (merge gate, line 21): write the work dir; network allow: proxy.golang.org:443\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("validate lacks %q:\n%s", want, r.stdout)
		}
	}
	if r = validate("VIBETEAM_SANDBOX=off"); !strings.Contains(r.stdout, "  sandbox: off (VIBETEAM_SANDBOX=off; --sandbox turns it on); when on:\n") {
		t.Errorf("VIBETEAM_SANDBOX=off:\n%s", r.stdout)
	}
	p.write("plain.yaml", "name: plain\nsteps:\n  - { name: a, type: script, command: make }\n")
	cmd := p.command("validate", "plain.yaml")
	cmd.Env = withoutEnv(cmd.Env, "VIBETEAM_SANDBOX")
	if r = runResult(t, cmd); !strings.Contains(r.stdout, "  sandbox: off for this run unless asked (--sandbox, VIBETEAM_SANDBOX=on); on by default for bead runs and --auto-approve; when on:\n") ||
		!strings.Contains(r.stdout, "    step a (script, line 3): write the work dir; network allow: no host (the model routes only)\n") {
		t.Errorf("a plain grimoire:\n%s", r.stdout)
	}
}

// preview shows the sandbox of a bead run: on by default, its work dir the
// bead's worktree, each step's own sandbox; and it writes nothing for it.
func TestPreviewShowsTheSandboxOfABeadRun(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("g.yaml", sandboxGrimoire)
	p.write("bead.json", `{"id":"bd-7","title":"t"}`)
	cmd := p.command("preview", "g.yaml", "--bead-file", "bead.json")
	cmd.Env = withoutEnv(cmd.Env, "VIBETEAM_SANDBOX")
	r := runResult(t, cmd)
	wantCode(t, r, 0)
	work := p.path(".worktrees/bd-7")
	for _, want := range []string{
		"  sandbox: on (the sandbox: block of g.yaml)",
		"    writable: the bead's worktree " + work + ", a private /tmp, ",
		"    step build (script, line 4): write the work dir, ~/cache, " + filepath.Join(work, "out") + "; network allow: proxy.golang.org:443\n",
		"    step impl (agent fake, line 12): write the work dir; network none (the model routes only)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("preview lacks %q:\n%s", want, r.stdout)
		}
	}
	if p.exists(".worktrees") {
		t.Error("preview made the worktree")
	}
	p.write("plain.yaml", "name: plain\nsteps:\n  - { name: a, type: script, command: make }\n")
	cmd = p.command("preview", "plain.yaml", "--bead-file", "bead.json")
	cmd.Env = withoutEnv(cmd.Env, "VIBETEAM_SANDBOX")
	if r = runResult(t, cmd); !strings.Contains(r.stdout, "  sandbox: on (the default for a bead run)") {
		t.Errorf("a bead run's default:\n%s", r.stdout)
	}
}

// An agent's write the sandbox refused: the step it failed blocks with
// reason sandbox_refused, naming the path and the write: entry that would
// allow it, in stderr, show and log, and the task's record keeps it; an
// agent that went on to succeed is DONE, and the log still says what was
// refused.
func TestAnAgentsRefusedWriteIsSandboxRefused(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	outside := filepath.Join(h.home, "cache")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	h.write(".vibeteam/adapters/agent.yaml", fmt.Sprintf("name: agent\ncommand: %s\nmodes:\n  headless:\n    args: []\n    prompt: { position: arg }\n", fakeAgent))
	h.write("good.md", "Done.\n\n```json\n{\"success\": true, \"summary\": \"made it\"}\n```\n")
	h.write(".vibeteam/grimoires/out.yaml", strings.NewReplacer("OUT", outside).Replace(`name: out
steps:
  - name: tries
    type: agent
    adapter: agent
    spell: |
      exec=echo_x_>_OUT/tried.txt_||_true cat=good.md
  - name: impl
    type: agent
    adapter: agent
    on_fail: block
    spell: |
      write=OUT/out.txt:made
`))
	r := h.run("run", "out", "--sandbox")
	wantCode(t, r, 3)
	s := h.only()
	if s.BlockedReason != "sandbox_refused" {
		t.Fatalf("blocked %q: %s\n%s", s.BlockedReason, s.Error, r.stderr)
	}
	want := "sandbox: {write: [~/cache]}"
	for what, text := range map[string]string{"stderr": r.stderr, "show": h.exec("show", s.ID).stdout, "log": h.exec("log", s.ID).stdout} {
		if !strings.Contains(text, "sandbox_refused") || !strings.Contains(text, filepath.Join(outside, "out.txt")) || !strings.Contains(text, want) {
			t.Errorf("%s does not name the refusal, the path and %q:\n%s", what, want, text)
		}
	}
	refusedRecords := 0
	for _, run := range s.Runs {
		if run.Task != nil && strings.Contains(run.Task.SandboxRefused, outside) {
			refusedRecords++
		}
	}
	if refusedRecords != 2 {
		t.Errorf("%d task records keep the refused write, want 2", refusedRecords)
	}
	if lg := h.exec("log", s.ID).stdout; !strings.Contains(lg, "the sandbox refused a write to "+filepath.Join(outside, "tried.txt")) {
		t.Errorf("the log does not say what the DONE agent was refused:\n%s", lg)
	}
	for _, f := range []string{"tried.txt", "out.txt"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}

// A merge gate's write the sandbox refused: the bead blocks with reason
// sandbox_refused (not merge_gate_red), naming the path and the entry, and
// the base does not move.
func TestAMergeGatesRefusedWriteIsSandboxRefused(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	outside := filepath.Join(h.home, "gatecache")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	h.write(".vibeteam/grimoires/gated.yaml", strings.NewReplacer("OUT", outside).Replace(`name: gated
steps:
  - name: work
    type: script
    command: echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@a commit -q -m work
  - name: merge
    type: merge
    require_review: false
    gate: echo cached > OUT/gate.txt
`))
	head := h.git("rev-parse", "main")
	r := h.run("run", "gated", "--bead-file", "bead.json", "--sandbox")
	wantCode(t, r, 3)
	s := h.only()
	if s.BlockedReason != "sandbox_refused" {
		t.Fatalf("blocked %q: %s\n%s", s.BlockedReason, s.Error, r.stderr)
	}
	for what, text := range map[string]string{"stderr": r.stderr, "show": h.exec("show", s.ID).stdout} {
		if !strings.Contains(text, filepath.Join(outside, "gate.txt")) || !strings.Contains(text, "sandbox: {write: [~/gatecache]}") {
			t.Errorf("%s does not name the path and the entry:\n%s", what, text)
		}
	}
	if now := h.git("rev-parse", "main"); now != head {
		t.Errorf("main moved: %s → %s", head, now)
	}
}

// The processes of a session whose network is the same share one network
// namespace, where the session's proxy listens (no bridge per process):
// two script steps are in the same one, not the host's; a step with
// network: none is in another (its own policy); and in a session whose
// network is all, a step with network: allow still gets a namespace that
// is not the host's.
func TestSandboxedStepsShareTheNamespaceOfTheirNetwork(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	h.write(".vibeteam/grimoires/ns.yaml", `name: ns
steps:
  - { name: a, type: script, command: "readlink /proc/self/ns/net > a.txt" }
  - { name: b, type: script, command: "readlink /proc/self/ns/net > b.txt" }
  - { name: c, type: script, sandbox: {network: none}, command: "readlink /proc/self/ns/net > c.txt" }
`)
	h.write(".vibeteam/grimoires/all.yaml", `name: all
sandbox: {network: all}
steps:
  - { name: d, type: script, command: "readlink /proc/self/ns/net > d.txt" }
  - { name: e, type: script, sandbox: {network: allow}, command: "readlink /proc/self/ns/net > e.txt" }
`)
	wantCode(t, h.run("run", "ns", "--sandbox"), 0)
	wantCode(t, h.run("run", "all", "--sandbox"), 0)
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	ns := map[string]string{}
	for _, f := range []string{"a", "b", "c", "d", "e"} {
		ns[f] = strings.TrimSpace(h.read(f + ".txt"))
	}
	if ns["a"] != ns["b"] || ns["a"] == host {
		t.Errorf("two steps of one network: %q and %q (the host's %q): want one namespace of the session's", ns["a"], ns["b"], host)
	}
	if ns["c"] == ns["a"] || ns["c"] == host {
		t.Errorf("network: none is in %q (the others' %q, the host's %q): want its own", ns["c"], ns["a"], host)
	}
	if ns["d"] != host {
		t.Errorf("network: all is in %q, want the host's %q", ns["d"], host)
	}
	if ns["e"] == host {
		t.Errorf("network: allow in a session whose network is all has the host's network %q", host)
	}
}

// A script's step starts in a sandbox kept for its shape (runner.Warmer),
// once steps of that sandbox came twice, made when the last of them
// ended: the fourth step's parent is the kept sandbox's server, which
// began before the third step's second of sleep (a sandbox of another
// shape, network: none), not when the fourth started. It is the same
// sandbox all the same: the hostile program, run there, escapes nowhere.
func TestScriptStepStartsInASandboxMadeAhead(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	h.write(".vibeteam/grimoires/warm.yaml", fmt.Sprintf(`name: warm
steps:
  - { name: first, type: script, command: "true" }
  - { name: second, type: script, command: "true" }
  - { name: third, type: script, sandbox: {network: none}, command: "sleep 1" }
  - name: fourth
    type: script
    command: |
      set -- $(cat /proc/$PPID/stat); began=${22}
      read up _ < /proc/uptime; up=${up%%.*}${up#*.}
      echo $((up - began)) > age.txt
      tr '\0' ' ' < /proc/$PPID/cmdline > parent.txt
      hostile -base %s -addr %s -report warm-escapes.txt
`, h.dir, h.addr))
	wantCode(t, h.run("run", "warm", "--bead-file", "bead.json", "--sandbox"), 0)
	// The step's parent is the kept sandbox's server (this binary), not
	// bwrap; in ticks of 1/100 s, made during the sleep, at least half a
	// second old.
	if parent := h.read(".worktrees/bd-1/parent.txt"); !strings.HasPrefix(parent, vibeteam+" ") {
		t.Errorf("the fourth step's parent is %q, not the server %s", parent, vibeteam)
	}
	ageText := h.read(".worktrees/bd-1/age.txt")
	age, err := strconv.Atoi(strings.TrimSpace(ageText))
	if err != nil || age < 50 {
		t.Errorf("the fourth step's sandbox was %s ticks old when it ran (%v): want ≥ 50, made before the third step", ageText, err)
	}
	wantHeld(t, "a step in a sandbox made ahead", h.read(".worktrees/bd-1/warm-escapes.txt"), hostileTries)
	for _, p := range []string{filepath.Join(h.home, "hostile-was-here"), h.path("hostile-was-here"), h.path(".git/hooks/post-commit"), h.path(".vibeteam/sessions/hostile.json")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written from inside the sandbox", p)
		}
	}
	if n := h.connects.Load(); n != 0 {
		t.Errorf("%d connections reached %s from inside the sandbox", n, h.addr)
	}
}
