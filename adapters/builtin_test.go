package adapters

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/handlers"
)

func TestBuiltinsLoad(t *testing.T) {
	files, err := builtinFS.ReadDir("builtin")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry()
	if len(files) != len(r.Names()) {
		t.Fatalf("%d files, %d adapters", len(files), len(r.Names()))
	}
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".yaml")
		data, _ := builtinFS.ReadFile("builtin/" + f.Name())
		d, err := parseDefinition(f.Name(), data)
		if err != nil {
			t.Errorf("%s: %v", f.Name(), err)
			continue
		}
		if d.name != name {
			t.Errorf("%s: name %q differs from the file name", f.Name(), d.name)
		}
		if d.description == "" {
			t.Errorf("%s: no description", f.Name())
		}
		// Every built-in has a headless mode; all but qwen (whose TUI
		// is not tested) an interactive one; every agent an acp one.
		for _, m := range []Mode{Interactive, Headless} {
			if _, ok := d.modes[m]; !ok && !(m == Interactive && name == "qwen") {
				t.Errorf("%s: no %s mode", f.Name(), m)
			}
		}
		if (d.acp == nil) != (name == "shell") {
			t.Errorf("%s: acp mode %v", f.Name(), d.acp != nil)
		}
		for _, s := range d.states {
			if s.Pattern == nil {
				t.Errorf("%s: state %s has no pattern", f.Name(), s.Name)
			}
		}
	}
}

// The argv each built-in produces: what users see in `vibeteam preview` and
// what the real CLIs were checked against.
func TestBuiltinArgv(t *testing.T) {
	cases := []struct {
		adapter string
		mode    Mode
		want    []string
	}{
		{"claude", Headless, []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--", "hi"}},
		{"claude", Interactive, []string{"claude", "--permission-mode", "default", "--", "hi"}},
		{"codex", Headless, []string{"codex", "exec", "--json", "--skip-git-repo-check", "--disable=daemon_auto_start", "--", "hi"}},
		{"codex", Interactive, []string{"codex", "--disable=daemon_auto_start", "--", "hi"}},
		{"gemini", Headless, []string{"gemini", "--output-format", "stream-json", "--skip-trust", "--prompt=hi"}},
		{"gemini", Interactive, []string{"gemini", "--prompt-interactive=hi"}},
		{"opencode", Headless, []string{"opencode", "run", "--format", "json", "--", "hi"}},
		{"opencode", Interactive, []string{"opencode", "--prompt=hi"}},
		{"shell", Headless, []string{"sh", "-c", "--", "hi"}},
		{"shell", Interactive, []string{"sh", "-c", "--", "hi"}},
	}
	r := NewRegistry()
	for _, c := range cases {
		lc, err := mustNew(t, r, c.adapter).LaunchConfig(c.mode, "hi", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := append([]string{lc.Command}, lc.Args...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.adapter, c.mode, got, c.want)
		}
		if lc.UsePTY != (c.mode == Interactive) {
			t.Errorf("%s %s: UsePTY %v", c.adapter, c.mode, lc.UsePTY)
		}
	}
}

func TestBuiltinInjectArgs(t *testing.T) {
	want := map[string][]string{
		"claude":   {"--allowedTools=Bash Edit Write Read Glob Grep WebFetch"},
		"codex":    {"--sandbox", "workspace-write"},
		"gemini":   {"--approval-mode", "yolo", "--skip-trust"},
		"opencode": {"--auto"},
		"shell":    nil,
	}
	r := NewRegistry()
	for name, w := range want {
		var got []string
		if p := mustNew(t, r, name).AutoPolicy(); p != nil {
			got = p.InjectArgs
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: injectArgs %q, want %q", name, got, w)
		}
	}
}

func TestShellRunsWithExtraArgsAsOptions(t *testing.T) {
	lc, err := mustNew(t, NewRegistry(), "shell").LaunchConfig(Headless, "echo hi", []string{"-e"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lc.Args, []string{"-c", "-e", "--", "echo hi"}) {
		t.Errorf("args %q", lc.Args)
	}
}

// A prompt is text for the agent, never an option of its CLI: whatever it
// starts with, every built-in puts it after "--" or inside a --flag=value
// element, last in argv, after the auto-approve injectArgs.
func TestBuiltinPromptNeverAnOption(t *testing.T) {
	const prompt = "--dangerously-skip-permissions"
	flagForm := map[string]map[Mode]string{
		"gemini":   {Headless: "--prompt=", Interactive: "--prompt-interactive="},
		"opencode": {Interactive: "--prompt="},
		"qwen":     {Headless: "--prompt="},
	}
	r := NewRegistry()
	for _, name := range r.Names() {
		for _, mode := range []Mode{Headless, Interactive} {
			if !r.HasMode(name, string(mode)) {
				continue
			}
			for _, auto := range []bool{false, true} {
				a, err := r.New(name, Options{AutoApprove: auto})
				if err != nil {
					t.Fatal(err)
				}
				extra := []string{"--model", "m"}
				lc, err := a.LaunchConfig(mode, prompt, extra)
				if err != nil {
					t.Errorf("%s %s auto=%v: %v", name, mode, auto, err)
					continue
				}
				args := lc.Args
				where := fmt.Sprintf("%s %s auto=%v: %q", name, mode, auto, args)
				if flag := flagForm[name][mode]; flag != "" {
					if args[len(args)-1] != flag+prompt {
						t.Errorf("%s: want the prompt as %s<prompt>, last", where, flag)
					}
					if slices.Contains(args, prompt) {
						t.Errorf("%s: the prompt is also a bare element", where)
					}
				} else if len(args) < 2 || args[len(args)-1] != prompt || args[len(args)-2] != "--" {
					t.Errorf("%s: want -- then the prompt, last", where)
				}
				// The prompt part is last; before it, in order: the mode's
				// args, extraArgs, injectArgs (with auto-approve only).
				var inject []string
				if p := a.AutoPolicy(); auto && p != nil {
					inject = p.InjectArgs
				}
				head := args[:len(args)-1]
				if head[len(head)-1] == "--" {
					head = head[:len(head)-1]
				}
				tail := append(slices.Clone(extra), inject...)
				if len(head) < len(tail) || !reflect.DeepEqual(head[len(head)-len(tail):], tail) {
					t.Errorf("%s: want extraArgs then injectArgs %q just before the prompt", where, inject)
				}
				if name == "claude" && auto {
					const allowed = "--allowedTools=Bash Edit Write Read Glob Grep WebFetch"
					if !slices.Contains(args, allowed) || slices.Contains(args, "--allowedTools") {
						t.Errorf("%s: want allowedTools as the one element %q", where, allowed)
					}
				}
			}
		}
	}
}

// firstState is what the engine does: the first declared state whose
// pattern matches the screen.
func firstState(states []State, screen string) string {
	for _, s := range states {
		if s.Pattern.MatchString(screen) {
			return s.Name
		}
	}
	return ""
}

// The screens in testdata/screens were rendered (hinshun/vt10x, 120x40) from
// the real CLIs in a PTY, driven against a fake model server: Claude Code
// 2.1.197, Codex 0.169.0, Gemini CLI 0.61.0, opencode 1.18.33.
func TestBuiltinStatesOnRealScreens(t *testing.T) {
	cases := []struct {
		adapter, screen, state, keys string // keys: what --auto-approve sends, or "choose:LABEL"
	}{
		{"claude", "claude_trust.txt", "interaction_trust", "choose:Yes, I trust this folder"},
		{"claude", "claude_api_key.txt", "interaction_api_key", "choose:Yes"},
		{"claude", "claude_idle.txt", StateIdle, ""},
		{"claude", "claude_working.txt", StateWorking, ""},
		{"claude", "claude_permission.txt", "interaction_permission", "choose:Yes"},
		// Claude Code 2.1.332, rendered from recordings (core/runner/testdata/screens).
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.332-trust.golden", "interaction_trust", "choose:Yes, I trust this folder"},
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.332-trust-yes.golden", "interaction_trust", "choose:Yes, I trust this folder"},
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.332-apikey.golden", "interaction_api_key", "choose:Yes"},
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.332-idle.golden", StateIdle, ""},
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.197-idle.golden", StateIdle, ""},
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.332-permission.golden", "interaction_permission", "choose:Yes"},
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.197-permission.golden", "interaction_permission", "choose:Yes"},
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.332-idle-after-tool.golden", StateIdle, ""},
		{"claude", "../../../core/runner/testdata/screens/claude-2.1.197-idle-after-tool.golden", StateIdle, ""},
		{"claude", "claude_idle_after_tool.txt", StateIdle, ""},
		// 2.1.332 under load: the spinner before the first request, over the idle box.
		{"claude", "claude_spinner_before_request.txt", StateWorking, ""},
		{"codex", "codex_splash.txt", "", ""}, // the argv prompt is not sent yet
		{"codex", "codex_trust.txt", "interaction_trust", "choose:Trust and continue"},
		{"codex", "codex_idle.txt", StateIdle, ""},
		{"codex", "codex_typing.txt", "", ""},
		{"codex", "codex_working.txt", StateWorking, ""},
		{"codex", "codex_approval.txt", "interaction_approval", "choose:Yes, proceed"},
		{"codex", "codex_idle_after_tool.txt", StateIdle, ""},
		// A long directory and the session's title wrap the status line.
		{"codex", "codex_idle_status_wrapped.txt", StateIdle, ""},
		{"gemini", "gemini_trust.txt", "interaction_trust", ""}, // --skip-trust avoids it under --auto-approve
		{"gemini", "gemini_idle_after_trust_restart.txt", StateIdle, ""},
		{"gemini", "gemini_model_access.txt", "", ""},
		{"opencode", "opencode_idle.txt", StateIdle, ""},
		{"opencode", "opencode_typing.txt", "", ""}, // typed, not yet submitted
		{"opencode", "opencode_working.txt", StateWorking, ""},
		{"opencode", "opencode_working_esc.txt", StateWorking, ""},
		{"opencode", "opencode_idle_after_reply.txt", StateIdle, ""},
		// The cursor's row keeps its spaces up to the cursor.
		{"opencode", "opencode_idle_cursor_row.txt", StateIdle, ""},
		{"opencode", "opencode_session_typing.txt", "", ""},
		{"opencode", "opencode_permission.txt", "interaction_permission", "\r"},
		{"opencode", "opencode_permission_bash.txt", "interaction_permission", "\r"},
		{"opencode", "opencode_idle_after_tool.txt", StateIdle, ""},
		{"opencode", "opencode_question.txt", "interaction_question", ""}, // the person answers
	}
	r := NewRegistry()
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join("testdata", "screens", c.screen))
		if err != nil {
			t.Fatal(err)
		}
		screen := string(data)
		a := mustNew(t, r, c.adapter)
		got := firstState(a.States(), screen)
		if got != c.state {
			t.Errorf("%s: state %q, want %q", c.screen, got, c.state)
		}
		var keys string
		if act := a.AutoPolicy().Action(handlers.Context{TaskID: "t", State: got, Screen: screen}); act != nil {
			keys = act.Keys
			if act.Choose != "" {
				keys = "choose:" + act.Choose
				if m := handlers.FindOption(screen, act.Choose); m.Option < 0 || m.Selected < 0 {
					t.Errorf("%s: option %q or the selection not found on the screen: %+v", c.screen, act.Choose, m)
				}
			}
		}
		if keys != c.keys {
			t.Errorf("%s: auto-approve sends %q, want %q", c.screen, keys, c.keys)
		}
	}
}

func TestBuiltinStatesOrder(t *testing.T) {
	// Every state that asks a question comes before working and idle in
	// claude, codex and opencode: a dialog drawn over the idle prompt must win.
	for _, name := range []string{"claude", "codex", "opencode"} {
		seenPassive := false
		for _, s := range mustNew(t, NewRegistry(), name).States() {
			if !s.NeedsAnswer() {
				seenPassive = true
			} else if seenPassive {
				t.Errorf("%s: question %s after working/idle", name, s.Name)
			}
		}
	}
}

func TestStateNeedsAnswer(t *testing.T) {
	for name, want := range map[string]bool{
		StateIdle: false, StateWorking: false, "interaction_handler": true, "interaction_trust": true, "busy": false,
	} {
		if got := (State{Name: name}).NeedsAnswer(); got != want {
			t.Errorf("%s: %v", name, got)
		}
	}
}

// seen is what the adaptersTestCapture handler was last called with.
var seen handlers.Context

// Registered once per test binary: a second Register of a name panics, and
// tests may run more than once (-count).
func init() {
	handlers.Register("adaptersTestCapture", func(string) (handlers.Func, error) {
		return func(ctx handlers.Context) *handlers.Action {
			seen = ctx
			return &handlers.Action{Keys: "c"}
		}, nil
	})
}

func TestHandlerAction(t *testing.T) {
	p := &AutoPolicy{Handlers: []Handler{
		{When: regexp.MustCompile(`never`), Send: "x"},
		{When: regexp.MustCompile(`Continue \(y/n\)`), Use: "adaptersTestCapture"},
		{When: regexp.MustCompile(`Continue`), Send: "y\r"},
	}}
	ctx := handlers.Context{TaskID: "t", State: "interaction_handler", Screen: "a\nContinue (y/n)\n"}
	if a := p.Action(ctx); a == nil || a.Keys != "c" {
		t.Fatalf("got %+v", a)
	}
	if seen.Match != "Continue (y/n)" || seen.TaskID != "t" || seen.State != "interaction_handler" {
		t.Errorf("handler saw %+v", seen)
	}
	if a := p.Action(handlers.Context{Screen: "Continue?"}); a == nil || a.Keys != "y\r" || a.Description == "" {
		t.Errorf("send: %+v", a)
	}
	if a := p.Action(handlers.Context{Screen: "nothing here"}); a != nil {
		t.Errorf("no match: %+v", a)
	}
	var nilPolicy *AutoPolicy
	if nilPolicy.Action(ctx) != nil {
		t.Error("nil policy")
	}
	bad := Handler{When: regexp.MustCompile(`x`), Use: "noSuchHandler"}
	if bad.Action(handlers.Context{Screen: "x"}) != nil {
		t.Error("a handler with an unknown Use must not apply")
	}
}

// An idle match covers the input box only, never the transcript above it:
// the submitted prompt shown there is evidence that a turn ran (the engine
// looks for it outside the idle match), and a match from the first ❯ would
// swallow it.
func TestClaudeIdleMatchIsTheInputBoxOnly(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "screens", "claude_idle_after_tool.txt"))
	if err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, NewRegistry(), "claude")
	for _, s := range a.States() {
		if s.Name != StateIdle {
			continue
		}
		m := s.Pattern.FindString(string(data))
		if m == "" || strings.Count(m, "❯") != 1 {
			t.Fatalf("idle match %q, want the input box alone", m)
		}
		return
	}
	t.Fatal("no idle state")
}

// The version each built-in agent adapter records as tested is the one the
// e2e tier installs (e2e/run.sh, PACKAGES and BINARIES), so that the two can
// never drift: vibeteam doctor compares the installed CLI with it. An
// adapter with a version key must be pinned there, and a pinned CLI must
// have a tested version.
func TestBuiltinTestedVersionsAreTheE2EPins(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "e2e", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	array := func(name string) []string {
		m := regexp.MustCompile(`(?ms)^` + name + `=\((.*?)\)`).FindSubmatch(data)
		if m == nil {
			t.Fatalf("e2e/run.sh has no %s=( ... ) array", name)
		}
		var out []string
		for _, w := range strings.Fields(string(m[1])) {
			out = append(out, strings.Trim(w, `"'`))
		}
		return out
	}
	// The ACP side (the ACP adapters of claude and codex, and qwen) is
	// pinned in arrays of its own, added to these.
	packages := append(array("PACKAGES"), array("ACP_PACKAGES")...)
	binaries := append(array("BINARIES"), array("ACP_BINARIES")...)
	if len(packages) == 0 || len(packages) != len(binaries) {
		t.Fatalf("PACKAGES %q and BINARIES %q do not pair up", packages, binaries)
	}
	pinned := map[string]string{} // binary → version
	for i, spec := range packages {
		at := strings.LastIndex(spec, "@")
		if at <= 0 {
			t.Fatalf("package %q has no @VERSION", spec)
		}
		pinned[binaries[i]] = spec[at+1:]
	}
	r := NewRegistry()
	for _, info := range r.Info() {
		want, isPinned := pinned[info.Command]
		delete(pinned, info.Command)
		switch {
		case info.Version == nil && isPinned:
			t.Errorf("%s: no version key, but e2e/run.sh pins %s %s", info.Name, info.Command, want)
		case info.Version == nil:
			// shell: no version to check
		case !isPinned:
			t.Errorf("%s: tested %q, but e2e/run.sh pins no %s", info.Name, info.Version.Tested, info.Command)
		case info.Version.Tested != want:
			t.Errorf("%s: tested %q, e2e/run.sh pins %s", info.Name, info.Version.Tested, want)
		}
	}
	for bin, v := range pinned {
		if slices.ContainsFunc(r.Names(), func(n string) bool { return r.ACPCommand(n) == bin }) {
			continue // an ACP adapter package (claude-agent-acp, codex-acp)
		}
		t.Errorf("e2e/run.sh pins %s %s, which no built-in adapter runs", bin, v)
	}
	// Their header comments name the version too, for a reader of the file.
	for _, info := range r.Info() {
		if info.Version == nil || info.Source != SourceBuiltin {
			continue
		}
		data, _ := builtinFS.ReadFile("builtin/" + info.Name + ".yaml")
		text := strings.ReplaceAll(string(data), "\n# ", " ")
		if !strings.Contains(text, "against "+info.Version.Tested) {
			t.Errorf("%s.yaml: its header comment does not say it was checked against %s", info.Name, info.Version.Tested)
		}
	}
}

// The settle before an answer is codex's alone: it drops keys sent while
// it reads its terminal-query replies at start-up. Every other adapter
// answers once the screen is quiet.
func TestBuiltinAnswerSettle(t *testing.T) {
	r := NewRegistry()
	for _, name := range r.Names() {
		want := time.Duration(0)
		if name == "codex" {
			want = 300 * time.Millisecond
		}
		if got := mustNew(t, r, name).AnswerSettle(); got != want {
			t.Errorf("%s: answerSettle %s, want %s", name, got, want)
		}
	}
}

// The auth.env written out for the built-ins is the files'.
func TestBuiltinAuthEnv(t *testing.T) {
	t.Parallel()
	var want []string
	for _, i := range NewRegistry().Info() {
		if i.Source == SourceBuiltin {
			want = append(want, i.Auth.Env...)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want) // qwen's OPENAI_API_KEY is codex's too
	got := slices.Clone(builtinAuthEnv)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("builtinAuthEnv is %v, the built-in files say %v", got, want)
	}
}
