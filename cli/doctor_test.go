package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
)

// versionAdapter writes an adapter file NAME whose command is a script
// printing "NAME-cli VERSION", with the tested version and auth env given.
func (p *project) versionAdapter(name, version, tested string, authEnv ...string) {
	p.t.Helper()
	script := p.write("bin/"+name, fmt.Sprintf("#!/bin/sh\necho '%s-cli %s'\n", name, version))
	if err := os.Chmod(script, 0o755); err != nil {
		p.t.Fatal(err)
	}
	src := fmt.Sprintf("command: %s\nmodes: { headless: {} }\nversion: { tested: %q }\n", script, tested)
	if len(authEnv) > 0 {
		src += fmt.Sprintf("auth: { env: [%s], note: \"or %s login\" }\n", strings.Join(authEnv, ", "), name)
	}
	p.write(".vibeteam/adapters/"+name+".yaml", src)
}

// stageWorkflow writes wf.yaml with one headless task per adapter.
func (p *project) stageWorkflow(adapterNames ...string) {
	p.t.Helper()
	src := "id: wf\nstages:\n  - id: s\n    tasks:\n"
	for i, a := range adapterNames {
		src += fmt.Sprintf("      - { id: t%d, adapter: %s, executionMode: headless, prompt: hi }\n", i, a)
	}
	p.write("wf.yaml", src)
}

// doctorJSON is one object of doctor --json.
type doctorJSON struct {
	Adapter   string `json:"adapter"`
	Source    string `json:"source"`
	Command   string `json:"command"`
	Path      string `json:"path"`
	Found     bool   `json:"found"`
	Version   string `json:"version"`
	Tested    string `json:"tested"`
	VersionOK *bool  `json:"versionOk"`
	AuthEnv   struct {
		Set     []string `json:"set"`
		Missing []string `json:"missing"`
	} `json:"authEnv"`
	AuthNote string   `json:"authNote"`
	Problems []string `json:"problems"`
	Warnings []string `json:"warnings"`
}

func decodeDoctor(t *testing.T, out string) map[string]doctorJSON {
	t.Helper()
	var list []doctorJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	m := map[string]doctorJSON{}
	for _, d := range list {
		m[d.Adapter] = d
	}
	return m
}

// block is the text report's block of adapter name.
func block(t *testing.T, out, name string) string {
	t.Helper()
	for _, b := range strings.Split(out, "\n\n") {
		if first, _, _ := strings.Cut(b, "\n"); strings.Contains(first, " "+name+" (") {
			return b
		}
	}
	t.Fatalf("no block for %s in:\n%s", name, out)
	return ""
}

func TestDoctorFileNeedsAMissingAdapter(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.versionAdapter("present", "1.0.0", "1.0.0")
	p.write(".vibeteam/adapters/ghost.yaml", "command: no-such-agent-cli-anywhere\nmodes: { headless: {} }\n")
	p.stageWorkflow("present", "ghost")
	r := p.exec("doctor", "wf.yaml")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "adapter ghost: no-such-agent-cli-anywhere is not on PATH") {
		t.Errorf("stderr does not name the missing adapter:\n%s", r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "wf.yaml uses: ghost, present\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if b := block(t, r.stdout, "ghost"); !strings.HasPrefix(b, "✗ ghost") || !strings.Contains(b, "✗ command  no-such-agent-cli-anywhere is not on PATH") {
		t.Errorf("ghost:\n%s", b)
	}
	if b := block(t, r.stdout, "present"); !strings.HasPrefix(b, "✓ present") {
		t.Errorf("present:\n%s", b)
	}
	// Only what the file uses.
	if strings.Contains(r.stdout, "claude") || strings.Contains(r.stdout, "fake") {
		t.Errorf("adapters the file does not use are listed:\n%s", r.stdout)
	}
}

func TestDoctorFileWithEverythingPresent(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.versionAdapter("one", "2.1.197", "2.1.197")
	p.versionAdapter("two", "0.9.1", "0.9.1")
	p.stageWorkflow("one", "two", "one")
	r := p.exec("doctor", "wf.yaml")
	wantCode(t, r, 0)
	for _, name := range []string{"one", "two"} {
		b := block(t, r.stdout, name)
		if !strings.HasPrefix(b, "✓ "+name+" (") || !strings.Contains(b, "✓ version  "+name+"-cli ") || !strings.Contains(b, ": ok") {
			t.Errorf("%s:\n%s", name, b)
		}
	}
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}
}

func TestDoctorVersionMatchesOrDiffers(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.versionAdapter("same", "2.1.197", "2.1.197")
	p.versionAdapter("newer", "2.1.198", "2.1.197")
	p.versionAdapter("older", "2.1.99", "2.1.197")
	// A prefix of the version is not the version.
	p.versionAdapter("longer", "2.1.197", "2.1.19")
	p.write(".vibeteam/adapters/untested.yaml", "command: "+p.path("bin/same")+"\nmodes: { headless: {} }\nversion: {}\n")
	p.stageWorkflow("same", "newer", "older", "longer", "untested")

	r := p.exec("doctor", "wf.yaml")
	wantCode(t, r, 0) // a version that differs is a warning
	if b := block(t, r.stdout, "same"); !strings.Contains(b, "✓ version  same-cli 2.1.197: ok") {
		t.Errorf("same:\n%s", b)
	}
	if b := block(t, r.stdout, "newer"); !strings.HasPrefix(b, "! newer") || !strings.Contains(b, "! version  newer-cli 2.1.198: differs: tested 2.1.197 (newer: its screens or output may have changed") {
		t.Errorf("newer:\n%s", b)
	}
	if b := block(t, r.stdout, "older"); !strings.Contains(b, "! version  older-cli 2.1.99: differs: tested 2.1.197 (older: it may lack flags or screens") {
		t.Errorf("older:\n%s", b)
	}
	// 2.1.197 against 2.1.19: newer, never a match.
	if b := block(t, r.stdout, "longer"); !strings.Contains(b, "differs: tested 2.1.19 (newer:") {
		t.Errorf("longer:\n%s", b)
	}
	if b := block(t, r.stdout, "untested"); !strings.Contains(b, "version  same-cli 2.1.197 (no tested version recorded)") {
		t.Errorf("untested:\n%s", b)
	}

	r = p.exec("doctor", "wf.yaml", "--json")
	wantCode(t, r, 0)
	got := decodeDoctor(t, r.stdout)
	for name, want := range map[string]*bool{"same": ptr(true), "newer": ptr(false), "older": ptr(false), "longer": ptr(false), "untested": nil} {
		if g := got[name].VersionOK; !reflect.DeepEqual(g, want) {
			t.Errorf("%s: versionOk %v, want %v", name, deref(g), deref(want))
		}
	}
	if g := got["newer"]; g.Version != "newer-cli 2.1.198" || g.Tested != "2.1.197" || len(g.Warnings) != 1 || len(g.Problems) != 0 {
		t.Errorf("newer: %+v", g)
	}
}

func ptr[T any](v T) *T { return &v }

func deref(b *bool) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprint(*b)
}

// A version command that fails, prints nothing or never ends is reported,
// and doctor does not wait for it past its timeout.
func TestDoctorVersionCommandFailsOrHangs(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	scripts := map[string]string{
		"failing": "echo 'unknown option --version' >&2; exit 3",
		"silent":  "exit 0",
		// A child of the script keeps the output open: the whole group goes.
		"hanging": "sleep 30 & sleep 30",
	}
	var names []string
	for name, body := range scripts {
		script := p.write("bin/"+name, "#!/bin/sh\n"+body+"\n")
		if err := os.Chmod(script, 0o755); err != nil {
			t.Fatal(err)
		}
		p.write(".vibeteam/adapters/"+name+".yaml", "command: "+script+"\nmodes: { headless: {} }\nversion: { tested: '1.0' }\n")
		names = append(names, name)
	}
	p.stageWorkflow(names...)
	start := time.Now()
	r := p.exec("doctor", "wf.yaml", "--timeout", "500ms")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("doctor took %s", d)
	}
	wantCode(t, r, 0)
	for name, want := range map[string]string{
		"failing": "failed (exit status 3): unknown option --version (tested 1.0)",
		"silent":  "printed nothing",
		"hanging": "did not finish within 500ms",
	} {
		if b := block(t, r.stdout, name); !strings.Contains(b, "! version  `"+p.path("bin/"+name)+" --version` "+want) {
			t.Errorf("%s:\n%s", name, b)
		}
	}
}

// Names only: which variables are set, never what they hold. None set is a
// warning with the adapter's note, not a failure.
func TestDoctorAuthEnv(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.versionAdapter("agent", "1.0.0", "1.0.0", "VT_DOCTOR_TEST_KEY", "VT_DOCTOR_TEST_TOKEN")
	p.stageWorkflow("agent")
	const secret = "sk-doctor-test-5ecret-value"
	run := func(env []string, args ...string) result {
		cmd := p.command(append([]string{"doctor", "wf.yaml"}, args...)...)
		var kept []string
		for _, kv := range cmd.Env {
			if !strings.HasPrefix(kv, "VT_DOCTOR_TEST_") {
				kept = append(kept, kv)
			}
		}
		cmd.Env = append(kept, env...)
		return runResult(t, cmd)
	}

	r := run([]string{"VT_DOCTOR_TEST_TOKEN=" + secret, "VT_DOCTOR_TEST_KEY="})
	wantCode(t, r, 0)
	if b := block(t, r.stdout, "agent"); !strings.HasPrefix(b, "✓ agent") || !strings.Contains(b, "✓ auth     VT_DOCTOR_TEST_TOKEN set") {
		t.Errorf("set:\n%s", b)
	}
	rj := run([]string{"VT_DOCTOR_TEST_TOKEN=" + secret}, "--json")
	wantCode(t, rj, 0)
	a := decodeDoctor(t, rj.stdout)["agent"]
	if !slices.Equal(a.AuthEnv.Set, []string{"VT_DOCTOR_TEST_TOKEN"}) || !slices.Equal(a.AuthEnv.Missing, []string{"VT_DOCTOR_TEST_KEY"}) || len(a.Warnings) != 0 {
		t.Errorf("json: %+v", a)
	}
	for _, out := range []string{r.stdout, r.stderr, rj.stdout, rj.stderr} {
		if strings.Contains(out, secret) {
			t.Fatalf("the secret value is printed:\n%s", out)
		}
	}

	r = run(nil)
	wantCode(t, r, 0)
	if b := block(t, r.stdout, "agent"); !strings.HasPrefix(b, "! agent") || !strings.Contains(b, "! auth     none of VT_DOCTOR_TEST_KEY, VT_DOCTOR_TEST_TOKEN is set; or agent login") {
		t.Errorf("unset:\n%s", b)
	}
	rj = run(nil, "--json")
	a = decodeDoctor(t, rj.stdout)["agent"]
	if len(a.AuthEnv.Set) != 0 || len(a.AuthEnv.Missing) != 2 || a.AuthNote != "or agent login" || len(a.Warnings) != 1 {
		t.Errorf("json: %+v", a)
	}
}

// --json: an array of one object per adapter, with every key, [] rather
// than null for the lists.
func TestDoctorJSONShape(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.versionAdapter("agent", "3.0.0", "3.0.0", "VT_DOCTOR_NEVER_SET")
	p.stageWorkflow("agent", "fake")
	r := p.exec("doctor", "wf.yaml", "--json")
	wantCode(t, r, 0)
	var raw []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || raw[0]["adapter"] != "agent" || raw[1]["adapter"] != "fake" {
		t.Fatalf("want agent and fake, sorted:\n%s", r.stdout)
	}
	keys := []string{"adapter", "authEnv", "authNote", "command", "found", "path", "problems", "source", "tested", "version", "versionOk", "warnings"}
	for _, obj := range raw {
		var got []string
		for k := range obj {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Errorf("keys %v, want %v", got, keys)
		}
		auth, _ := obj["authEnv"].(map[string]any)
		for what, v := range map[string]any{"authEnv.set": auth["set"], "authEnv.missing": auth["missing"], "problems": obj["problems"], "warnings": obj["warnings"]} {
			if _, ok := v.([]any); !ok {
				t.Errorf("%s: %s is %v, want a list", obj["adapter"], what, v)
			}
		}
	}
	got := decodeDoctor(t, r.stdout)
	if a := got["agent"]; !a.Found || a.Path != p.path("bin/agent") || a.Command != p.path("bin/agent") || a.Source != p.path(".vibeteam/adapters/agent.yaml") ||
		a.Version != "agent-cli 3.0.0" || a.Tested != "3.0.0" || a.VersionOK == nil || !*a.VersionOK {
		t.Errorf("agent: %+v", a)
	}
	// The fake adapter has no version key: nothing is run nor compared.
	if f := got["fake"]; !f.Found || f.Version != "" || f.Tested != "" || f.VersionOK != nil || len(f.Problems) != 0 || len(f.Warnings) != 0 {
		t.Errorf("fake: %+v", f)
	}
}

// A file that cannot be loaded is a usage error, as validate reports it; a
// broken adapter file the file needs is doctor's finding.
func TestDoctorBrokenFileOrAdapter(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.write("bad.yaml", "id: bad\nstages:\n  - id: s\n    tasks:\n      - { id: a, adapter: fake, promt: hi }\n")
	r := p.exec("doctor", "bad.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "bad.yaml:5:") || !strings.Contains(r.stderr, `unknown key "promt"`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}

	p.stageWorkflow("nope")
	r = p.exec("doctor", "wf.yaml")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, `wf.yaml:5:`) || !strings.Contains(r.stderr, `unknown adapter "nope"`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}

	r = p.exec("doctor", "no-such-workflow")
	wantCode(t, r, 2)

	r = p.exec("doctor", "a.yaml", "b.yaml")
	wantCode(t, r, 2)

	p.write(".vibeteam/adapters/cracked.yaml", "command: x\nmodes: { headless: {} }\nversion: { tested: [1] }\n")
	p.stageWorkflow("cracked", "fake")
	r = p.exec("doctor", "wf.yaml")
	wantCode(t, r, 1)
	if b := block(t, r.stdout, "cracked"); !strings.Contains(b, "✗ file     "+p.path(".vibeteam/adapters/cracked.yaml")+":3:") {
		t.Errorf("cracked:\n%s", b)
	}
	if !strings.Contains(r.stderr, "adapter cracked: its file is broken") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// Without FILE: every adapter, the built-ins included, and a missing CLI is
// only reported.
func TestDoctorWithoutFileListsEveryAdapter(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.versionAdapter("agent", "1.0.0", "1.0.0")
	p.write(".vibeteam/adapters/cracked.yaml", "command: x\nmodes: { headless: {} }\nauth: { env: A }\n")
	cmd := p.command("doctor", "--json")
	// No agent CLI of this machine is found, nor run.
	cmd.Env = append(cmd.Env, "PATH="+t.TempDir())
	r := runResult(t, cmd)
	wantCode(t, r, 0)
	got := decodeDoctor(t, r.stdout)
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"agent", "claude", "codex", "cracked", "fake", "gemini", "opencode", "qwen", "shell", "tui"}
	if !slices.Equal(names, want) {
		t.Fatalf("adapters %v, want %v", names, want)
	}
	c := got["claude"]
	if c.Found || c.Source != "built-in" || c.Tested != "2.1.332" || !slices.Equal(c.AuthEnv.Missing, []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}) ||
		c.AuthNote == "" || len(c.Problems) != 1 {
		t.Errorf("claude: %+v", c)
	}
	if s := got["shell"]; s.Tested != "" || s.VersionOK != nil || s.Command != "sh" {
		t.Errorf("shell: %+v", s)
	}
	if a := got["agent"]; !a.Found || a.VersionOK == nil || !*a.VersionOK {
		t.Errorf("agent: %+v", a)
	}
	if k := got["cracked"]; len(k.Problems) == 0 || !strings.Contains(k.Problems[0], "cracked.yaml:3:") {
		t.Errorf("cracked: %+v", k)
	}

	cmd = p.command("doctor")
	cmd.Env = append(cmd.Env, "PATH="+t.TempDir())
	r = runResult(t, cmd)
	wantCode(t, r, 0)
	for _, name := range want {
		block(t, r.stdout, name)
	}
	if b := block(t, r.stdout, "codex"); !strings.HasPrefix(b, "✗ codex (built-in)") || !strings.Contains(b, "codex is not on PATH") || !strings.Contains(b, "not checked (tested 0.171.0)") {
		t.Errorf("codex:\n%s", b)
	}
}

// A grimoire's agent steps run claude unless they say otherwise, in loops
// too; its script steps need no adapter.
func TestDoctorGrimoireAdapters(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.versionAdapter("claude", "2.1.197 (Claude Code)", "2.1.197")
	p.versionAdapter("other", "1.0.0", "1.0.0")
	p.write(".vibeteam/grimoires/g.yaml", `name: g
steps:
  - name: first
    type: agent
    spell: "do it\n"
  - name: again
    type: loop
    steps:
      - name: check
        type: script
        command: "true"
        on_success: exit_loop
      - name: fix
        type: agent
        adapter: other
        spell: "fix it\n"
`)
	r := p.exec("doctor", "g")
	wantCode(t, r, 0)
	if first, _, _ := strings.Cut(r.stdout, "\n"); !strings.HasSuffix(first, "g.yaml uses: claude, other") {
		t.Errorf("first line %q", first)
	}
	if b := block(t, r.stdout, "claude"); !strings.Contains(b, "✓ version  claude-cli 2.1.197 (Claude Code): ok") {
		t.Errorf("claude:\n%s", b)
	}
}

func TestDoctorHelp(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	r := p.exec("doctor", "--help")
	wantCode(t, r, 0)
	for _, want := range []string{"--json", "version.tested", "auth.env", "never values", "Exit status: 1", "[FILE|NAME]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "--timeout") {
		t.Error("the hidden --timeout is shown")
	}
}

func TestContainsVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line, version string
		want          bool
	}{
		{"2.1.197 (Claude Code)", "2.1.197", true},
		{"codex-cli 0.169.0", "0.169.0", true},
		{"v1.18.33", "1.18.33", true},
		{"version 1.2.3.", "1.2.3", true},
		{"2.1.197", "2.1.19", false},
		{"2.1.197", "2.1", false},
		{"12.1.197", "2.1.197", false},
		{"0.61.0-nightly", "0.61.0", true},
		{"1.0 then 11.0", "1.0", true},
		{"", "1.0", false},
	} {
		if got := adapters.ContainsVersion(c.line, c.version); got != c.want {
			t.Errorf("ContainsVersion(%q, %q) = %v", c.line, c.version, got)
		}
	}
}

// With FILE, the MCP servers it gives each adapter's agents are checked:
// a missing command is a problem FILE has (exit 1), named.
func TestDoctorChecksMCPServers(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.versionAdapter("one", "1.0.0", "1.0.0")
	server := p.write("tools/mcp-server", "#!/bin/sh\n")
	if err := os.Chmod(server, 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("wf.yaml", `id: wf
mcp:
  ok: { command: ./tools/mcp-server }
stages:
  - id: s
    tasks:
      - { id: t, adapter: one, executionMode: headless, prompt: hi, mcp: { gone: { command: no-such-mcp-server } } }
`)
	r := p.exec("doctor", "wf.yaml")
	wantCode(t, r, 1)
	b := block(t, r.stdout, "one")
	if !strings.Contains(b, "✓ mcp      server ok: "+server) || !strings.Contains(b, "✗ mcp      server gone: no-such-mcp-server is not on PATH") {
		t.Errorf("block:\n%s", b)
	}
	if !strings.Contains(r.stderr, "MCP server gone") {
		t.Errorf("stderr: %s", r.stderr)
	}
	// Once it is there, the file has what it needs.
	p.write("wf.yaml", "id: wf\nmcp:\n  ok: { command: ./tools/mcp-server }\nstages:\n  - id: s\n    tasks:\n      - { id: t, adapter: one, executionMode: headless, prompt: hi }\n")
	wantCode(t, p.exec("doctor", "wf.yaml"), 0)
}
