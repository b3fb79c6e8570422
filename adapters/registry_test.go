package adapters

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const testAdapter = `command: tool
modes:
  interactive: { args: [-i] }
  headless:
    args: [run, --json]
    prompt: { position: flag, flag: --message }
env: { FROM_FILE: file, SHARED: file }
`

func newTestAdapter(t *testing.T, src string, opts Options) Adapter {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "tool.yaml", src)
	r := NewRegistry()
	if err := r.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	a, err := r.New("tool", opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestLaunchConfigArgvOrder(t *testing.T) {
	a := newTestAdapter(t, testAdapter, Options{Name: "task-1", Cwd: "sub"})
	cases := []struct {
		mode   Mode
		prompt string
		extra  []string
		want   []string
	}{
		{Interactive, "do it", []string{"--model", "m"}, []string{"-i", "--model", "m", "do it"}},
		{Interactive, "", []string{"--model", "m"}, []string{"-i", "--model", "m"}},
		{Headless, "do it", []string{"--model", "m"}, []string{"run", "--json", "--model", "m", "--message", "do it"}},
		{Headless, "do it", nil, []string{"run", "--json", "--message", "do it"}},
		{Headless, "", nil, []string{"run", "--json"}},
	}
	for _, c := range cases {
		lc, err := a.LaunchConfig(c.mode, c.prompt, c.extra)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(lc.Args, c.want) {
			t.Errorf("%s %q %v: args %q, want %q", c.mode, c.prompt, c.extra, lc.Args, c.want)
		}
		if lc.Command != "tool" || lc.Cwd != "sub" || lc.Cols != 120 || lc.Rows != 40 {
			t.Errorf("launch config %+v", lc)
		}
		if lc.UsePTY != (c.mode == Interactive) {
			t.Errorf("%s: UsePTY = %v", c.mode, lc.UsePTY)
		}
	}
	if a.Name() != "task-1" || a.Type() != "tool" {
		t.Errorf("Name %q Type %q", a.Name(), a.Type())
	}
}

func TestLaunchConfigInjectArgsBeforePrompt(t *testing.T) {
	src := `command: tool
modes:
  headless: { args: [run], prompt: { separator: "--" } }
  interactive: { prompt: { flag: --message, form: equals } }
autoPolicy: { injectArgs: [--yes, --tools, "a b"] }
`
	cases := []struct {
		auto   bool
		mode   Mode
		prompt string
		want   []string
	}{
		{false, Headless, "do it", []string{"run", "-v", "--", "do it"}},
		{true, Headless, "do it", []string{"run", "-v", "--yes", "--tools", "a b", "--", "do it"}},
		{true, Headless, "", []string{"run", "-v", "--yes", "--tools", "a b"}},
		{true, Headless, "--yes", []string{"run", "-v", "--yes", "--tools", "a b", "--", "--yes"}},
		{false, Interactive, "-x", []string{"-v", "--message=-x"}},
		{true, Interactive, "a=b\nc", []string{"-v", "--yes", "--tools", "a b", "--message=a=b\nc"}},
	}
	for _, c := range cases {
		a := newTestAdapter(t, src, Options{AutoApprove: c.auto})
		lc, err := a.LaunchConfig(c.mode, c.prompt, []string{"-v"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(lc.Args, c.want) {
			t.Errorf("auto=%v %s %q: args %q, want %q", c.auto, c.mode, c.prompt, lc.Args, c.want)
		}
	}
	// Without an autoPolicy, AutoApprove adds nothing.
	a := newTestAdapter(t, "command: t\nmodes: { headless: {} }\n", Options{AutoApprove: true})
	if lc, err := a.LaunchConfig(Headless, "p", nil); err != nil || !reflect.DeepEqual(lc.Args, []string{"p"}) {
		t.Errorf("no policy: %q %v", lc.Args, err)
	}
}

// A prompt starting with "-" passed where the CLI may parse it as an option
// is refused, naming the adapter and the fix, unless the file opts out.
func TestLaunchConfigRefusesPromptReadableAsOption(t *testing.T) {
	src := `command: tool
modes:
  headless: { args: [run] }
  interactive: { prompt: { flag: --message } }
`
	a := newTestAdapter(t, src, Options{})
	_, err := a.LaunchConfig(Headless, "--dangerously-skip-permissions", nil)
	if err == nil || !strings.Contains(err.Error(), "adapter tool: ") || !strings.Contains(err.Error(), `modes.headless.prompt.separator: "--"`) ||
		!strings.Contains(err.Error(), "allowLeadingDash: true") || !strings.Contains(err.Error(), "--dangerously-skip-permissions") {
		t.Errorf("bare argument: %v", err)
	}
	_, err = a.LaunchConfig(Interactive, "-x", nil)
	if err == nil || !strings.Contains(err.Error(), "adapter tool: ") || !strings.Contains(err.Error(), "modes.interactive.prompt.form: equals") ||
		!strings.Contains(err.Error(), "`--message PROMPT`") {
		t.Errorf("separate flag value: %v", err)
	}
	// Long prompts are shortened in the message.
	_, err = a.LaunchConfig(Headless, "-"+strings.Repeat("x", 100), nil)
	if err == nil || strings.Contains(err.Error(), strings.Repeat("x", 41)) || !strings.Contains(err.Error(), "…") {
		t.Errorf("long prompt: %v", err)
	}
	// Only a leading dash matters.
	for _, p := range []string{"fix the -v flag", " -x", "x-"} {
		if _, err := a.LaunchConfig(Headless, p, nil); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	optOut := newTestAdapter(t, `command: tool
modes:
  headless: { prompt: { allowLeadingDash: true } }
  interactive: { prompt: { flag: -m, allowLeadingDash: true } }
`, Options{})
	if lc, err := optOut.LaunchConfig(Headless, "-x", nil); err != nil || !reflect.DeepEqual(lc.Args, []string{"-x"}) {
		t.Errorf("opted out, bare: %q %v", lc.Args, err)
	}
	if lc, err := optOut.LaunchConfig(Interactive, "-x", nil); err != nil || !reflect.DeepEqual(lc.Args, []string{"-m", "-x"}) {
		t.Errorf("opted out, flag: %q %v", lc.Args, err)
	}
}

func TestLaunchConfigErrors(t *testing.T) {
	src := "command: t\nmodes:\n  interactive: { prompt: { position: none } }\n"
	a := newTestAdapter(t, src, Options{})
	if _, err := a.LaunchConfig(Headless, "x", nil); err == nil || err.Error() != "adapter tool has no headless mode" {
		t.Errorf("missing mode: %v", err)
	}
	if _, err := a.LaunchConfig(Interactive, "x", nil); err == nil || err.Error() != "adapter tool does not take a prompt in mode interactive" {
		t.Errorf("position none: %v", err)
	}
	if lc, err := a.LaunchConfig(Interactive, "", []string{"-v"}); err != nil || !reflect.DeepEqual(lc.Args, []string{"-v"}) {
		t.Errorf("position none without prompt: %v %v", lc.Args, err)
	}
	if _, err := a.LaunchConfig("", "x", nil); err == nil || !strings.Contains(err.Error(), `unknown mode ""`) {
		t.Errorf("empty mode: %v", err)
	}
	if a.Name() != "tool" {
		t.Errorf("Name without Options.Name = %q, want the type", a.Name())
	}
}

func TestEnvMerge(t *testing.T) {
	a := newTestAdapter(t, testAdapter, Options{Env: map[string]string{"SHARED": "task", "TASK": "t"}})
	lc, err := a.LaunchConfig(Headless, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"FROM_FILE": "file", "SHARED": "task", "TASK": "t"}
	if !reflect.DeepEqual(lc.Env, want) {
		t.Errorf("env %v, want %v (the task's env wins)", lc.Env, want)
	}
	lc.Env["SHARED"] = "mutated"
	lc2, _ := a.LaunchConfig(Headless, "p", nil)
	if lc2.Env["SHARED"] != "task" {
		t.Error("mutating a returned Env changed the adapter")
	}
	none := newTestAdapter(t, "command: t\nmodes: { headless: {} }\n", Options{})
	if lc, _ := none.LaunchConfig(Headless, "p", nil); lc.Env != nil {
		t.Errorf("no env anywhere: got %v", lc.Env)
	}
}

func TestOptionsEnvIsCopied(t *testing.T) {
	env := map[string]string{"A": "1"}
	a := newTestAdapter(t, testAdapter, Options{Env: env})
	env["A"] = "changed later"
	lc, _ := a.LaunchConfig(Headless, "", nil)
	if lc.Env["A"] != "1" {
		t.Errorf("the adapter kept a reference to the caller's map: %v", lc.Env)
	}
}

func TestNewReturnsIndependentInstances(t *testing.T) {
	r := NewRegistry()
	a, err := r.New("claude", Options{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.New("claude", Options{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a.Name() != "a" || b.Name() != "b" {
		t.Fatalf("instances not distinct: %q %q", a.Name(), b.Name())
	}
	extra := []string{"--model", "x"}
	lcA, _ := a.LaunchConfig(Headless, "hi", extra)
	lcA.Args[0] = "MUTATED"
	extra[0] = "MUTATED"
	a.States()[0] = State{Name: "MUTATED"}
	polA := a.AutoPolicy()
	polA.InjectArgs[0] = "MUTATED"
	polA.Handlers[0].Send = "MUTATED"

	lcB, _ := b.LaunchConfig(Headless, "hi", []string{"--model", "x"})
	if lcB.Args[0] != "-p" {
		t.Errorf("args shared: %q", lcB.Args)
	}
	if b.States()[0].Name == "MUTATED" || a.States()[0].Name == "MUTATED" {
		t.Error("states shared")
	}
	polB := b.AutoPolicy()
	if polB.InjectArgs[0] == "MUTATED" || polB.Handlers[0].Send == "MUTATED" || a.AutoPolicy().InjectArgs[0] == "MUTATED" {
		t.Error("auto policy shared")
	}
}

func TestLoadDirMissingIsFine(t *testing.T) {
	r := NewRegistry()
	if err := r.LoadDir(filepath.Join(t.TempDir(), "nope", ".vibeteam", "adapters")); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Names(), []string{"claude", "codex", "gemini", "opencode", "qwen", "shell"}) {
		t.Errorf("Names = %v", r.Names())
	}
}

func TestLoadDirOverridesBuiltin(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "my-claude.yml", "name: claude\ncommand: my-claude\nmodes: { headless: { args: [--fast] } }\n")
	writeFile(t, dir, "aider.yaml", "command: aider\nmodes: { headless: {} }\n")
	writeFile(t, dir, "notes.txt", "not an adapter")
	if err := os.Mkdir(filepath.Join(dir, "dir.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry()
	if err := r.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	a, err := r.New("claude", Options{})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := a.LaunchConfig(Headless, "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lc.Command != "my-claude" || !reflect.DeepEqual(lc.Args, []string{"--fast", "hi"}) {
		t.Errorf("override not applied: %s %q", lc.Command, lc.Args)
	}
	if a.AutoPolicy() != nil || len(a.States()) != 0 {
		t.Error("the override must replace the built-in whole, not merge with it")
	}
	if !r.Has("aider") || r.Has("dir") || r.Has("notes") {
		t.Errorf("Names = %v", r.Names())
	}
	for _, in := range r.Info() {
		if in.Name == "claude" && in.Source != p {
			t.Errorf("claude source %q, want %q", in.Source, p)
		}
	}
	// Another registry is unaffected.
	if lc, _ := mustNew(t, NewRegistry(), "claude").LaunchConfig(Headless, "hi", nil); lc.Command != "claude" {
		t.Errorf("the override leaked into a fresh registry: %s", lc.Command)
	}
}

func mustNew(t *testing.T, r *Registry, name string) Adapter {
	t.Helper()
	a, err := r.New(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestLoadDirKeepsBadFilesAsBrokenAndLoadsGoodOnes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "command: a\nmodes: { headless: {} }\nbogus: 1\n")
	writeFile(t, dir, "b.yaml", "command: b\nmodes: { sideways: {} }\n")
	writeFile(t, dir, "good.yaml", "command: good\nmodes: { headless: {} }\n")
	writeFile(t, dir, "twin.yaml", "name: good\ncommand: twin\nmodes: { headless: {} }\n")
	// A broken file meant to replace a built-in hides it: running the
	// built-in instead would not be what its author asked for.
	writeFile(t, dir, "codex.yaml", "command: codex\nmodes: { headless: { args: oops } }\n")
	r := NewRegistry()
	if err := r.LoadDir(dir); err != nil {
		t.Fatalf("LoadDir = %v; a bad file must not fail the others", err)
	}
	want := []string{
		filepath.Join(dir, "a.yaml") + `:3:1: unknown key "bogus"`,
		filepath.Join(dir, "b.yaml") + `:2:10: modes: unknown key "sideways" (known: interactive, headless, acp)`,
		filepath.Join(dir, "codex.yaml") + ":2:28: modes.headless.args: must be a list of strings",
		filepath.Join(dir, "twin.yaml") + `: name: adapter "good" is already defined in ` + filepath.Join(dir, "good.yaml"),
	}
	broken := r.BrokenFiles()
	if len(broken) != len(want) {
		t.Fatalf("got %d broken files: %+v", len(broken), broken)
	}
	for i, w := range want {
		if !strings.HasPrefix(broken[i].Err.Error(), w) {
			t.Errorf("broken file %d = %q\nwant prefix %q", i, broken[i].Err.Error(), w)
		}
	}
	if !r.Has("good") || r.Has("a") || r.Has("b") || r.Has("codex") {
		t.Errorf("Names = %v", r.Names())
	}
	if lc, _ := mustNew(t, r, "good").LaunchConfig(Headless, "", nil); lc.Command != "good" {
		t.Errorf("the first file of a name must win, got %s", lc.Command)
	}
	if err := r.Broken("codex"); err == nil || !strings.Contains(err.Error(), "codex.yaml:2:28") {
		t.Errorf("Broken(codex) = %v", err)
	}
	if err := r.Broken("good"); err != nil {
		t.Errorf("Broken(good) = %v; a loaded adapter is not broken", err)
	}
	if err := r.Broken("claude"); err != nil {
		t.Errorf("Broken(claude) = %v", err)
	}
	// Fixed and loaded again, a file is no longer broken.
	writeFile(t, dir, "a.yaml", "command: a\nmodes: { headless: {} }\n")
	if err := r.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	if !r.Has("a") || r.Broken("a") != nil || len(r.BrokenFiles()) != len(want)-1 {
		t.Errorf("after the fix: Has(a) = %v, broken %+v", r.Has("a"), r.BrokenFiles())
	}
}

func TestLoadDirNotADirectory(t *testing.T) {
	f := writeFile(t, t.TempDir(), "file", "x")
	if err := NewRegistry().LoadDir(f); err == nil {
		t.Error("want an error for a file given as the adapters dir")
	}
}

func TestNewUnknownType(t *testing.T) {
	_, err := NewRegistry().New("agnet", Options{})
	if err == nil || err.Error() != `unknown adapter "agnet" (known: claude, codex, gemini, opencode, qwen, shell)` {
		t.Errorf("got %v", err)
	}
}

func TestInfo(t *testing.T) {
	bin := t.TempDir()
	writeFile(t, bin, "fake-agent", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(bin, "fake-agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	dir := t.TempDir()
	p := writeFile(t, dir, "fake.yaml", "command: fake-agent\ndescription: A fake\nmodes: { headless: {} }\n")
	writeFile(t, dir, "ghost.yaml", "command: no-such-agent-anywhere\nmodes: { headless: {} }\n")
	r := NewRegistry()
	if err := r.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	infos := r.Info()
	var names []string
	byName := map[string]Info{}
	for _, in := range infos {
		names = append(names, in.Name)
		byName[in.Name] = in
	}
	if !reflect.DeepEqual(names, []string{"claude", "codex", "fake", "gemini", "ghost", "opencode", "qwen", "shell"}) {
		t.Errorf("Info order: %v", names)
	}
	if got := byName["fake"]; !reflect.DeepEqual(got, Info{Name: "fake", Source: p, Command: "fake-agent", OnPath: true, Description: "A fake"}) {
		t.Errorf("fake: %+v", got)
	}
	if byName["ghost"].OnPath {
		t.Error("ghost: OnPath for a command that does not exist")
	}
	// PATH holds only the fake, so even sh is not found.
	if got := byName["shell"]; got.Source != SourceBuiltin || got.Command != "sh" || got.OnPath || got.Description == "" {
		t.Errorf("shell: %+v", got)
	}
}

func TestBrokenBuiltinPanics(t *testing.T) {
	fsys := fstest.MapFS{
		"builtin/ok.yaml":     {Data: []byte("command: ok\nmodes: { headless: {} }\n")},
		"builtin/broken.yaml": {Data: []byte("command: x\nmodes: { headless: { args: [ }\n")},
	}
	defer func() {
		v := recover()
		if v == nil {
			t.Fatal("no panic for a broken built-in")
		}
		if msg, _ := v.(string); !strings.Contains(msg, "builtin/broken.yaml:") {
			t.Errorf("panic %v does not name the file", v)
		}
	}()
	newRegistry(fsys)
}

func TestRegistryConcurrentUse(t *testing.T) {
	r := NewRegistry()
	dir := t.TempDir()
	writeFile(t, dir, "tool.yaml", testAdapter)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			if err := r.LoadDir(dir); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 50 {
		if _, err := r.New("claude", Options{}); err != nil {
			t.Fatal(err)
		}
		_ = r.Names()
		_ = r.Has("tool")
	}
	<-done
}
