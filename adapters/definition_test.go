package adapters

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/handlers"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

func TestParseErrorsAreLocatedAndCollected(t *testing.T) {
	src := `name: bad
command:
description: [x]
modes:
  interactive: { args: [-a], usePTY: false }
  batch: {}
  headless:
    args: foo
    prompt: { position: middle }
cols: wide
quietPeriod: soon
states:
  - { name: idle, pattern: '(' }
  - { pattern: 'x' }
  - just-a-string
autoPolicy:
  handlers:
    - { when: 'a', send: "y", use: pressEnter }
    - { when: 'b' }
    - { when: 'c', use: frobnicate }
    - { when: '[', send: x }
  extra: 1
colour: red
`
	want := []string{
		"bad.yaml:2:9: command: must not be empty",
		"bad.yaml:3:14: description: must be a string",
		"bad.yaml:5:38: modes.interactive.usePTY: interactive mode always runs in a PTY",
		`bad.yaml:6:3: modes: unknown key "batch" (known: interactive, headless, acp)`,
		`bad.yaml:8:11: modes.headless.args: must be a list of strings`,
		`bad.yaml:9:25: modes.headless.prompt.position: must be "arg", "flag", "none" or "stdin", got "middle"`,
		`bad.yaml:10:7: cols: must be a whole number from 1 to 10000`,
		`bad.yaml:11:14: quietPeriod: invalid duration "soon": write it like "90s", "10m" or "1h30m"`,
		"bad.yaml:13:28: states[0].pattern: error parsing regexp: missing closing ): `(`",
		`bad.yaml:14:5: states[1]: missing required key "name"`,
		`bad.yaml:15:5: states[2]: must be a mapping with "name" and "pattern"`,
		"bad.yaml:18:7: autoPolicy.handlers[0]: give one of send, use and choose, not more",
		"bad.yaml:19:7: autoPolicy.handlers[1]: needs send (keys), use (a handler such as pressEnter or select:1) or choose (a menu option's label)",
		// Other tests may register handlers, so the known list is not fixed.
		`bad.yaml:20:25: autoPolicy.handlers[2].use: unknown handler "frobnicate" (known: ` + strings.Join(handlers.Names(), ", ") + ")",
		"bad.yaml:21:15: autoPolicy.handlers[3].when: error parsing regexp: missing closing ]: `[`",
		`bad.yaml:22:3: autoPolicy: unknown key "extra" (known: injectArgs, handlers, sandboxedArgs, sandboxedEnv)`,
		`bad.yaml:23:1: unknown key "colour" (known: name, command, description, modes, cols, rows, quietPeriod, inactivityTimeout, stuckAfter, answerSettle, env, version, auth, mcp, states, autoPolicy)`,
	}
	_, err := parseDefinition("bad.yaml", []byte(src))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want an ErrorList, got %T %v", err, err)
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != "bad.yaml" || fe.Line != 2 || fe.Col != 9 || fe.Field != "command" {
		t.Errorf("errors.As(*FileError) = %+v", fe)
	}
}

func TestParseErrorCases(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"syntax", "command: a\n  b: [\n", "x.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		{"empty", "", "x.yaml:1:1: file is empty"},
		{"not a mapping", "- a\n", `x.yaml:1:1: the top level must be a mapping with "command" and "modes"`},
		{"missing command", "modes: { headless: {} }\n", `x.yaml:1:1: missing required key "command"`},
		{"missing modes", "command: a\n", `x.yaml:1:1: missing required key "modes"`},
		{"empty modes", "command: a\nmodes: {}\n", "x.yaml:2:8: modes: an adapter needs at least one mode: interactive, headless or acp"},
		{"duplicate key", "command: a\nmodes: { headless: {} }\ncommand: b\n", `x.yaml:3:1: duplicate key "command" (first defined at line 1)`},
		{"flag without flag", "command: a\nmodes:\n  headless: { prompt: { position: flag } }\n",
			`x.yaml:3:35: modes.headless.prompt: missing required key "flag" (position is flag)`},
		{"flag with arg", "command: a\nmodes:\n  headless: { prompt: { position: arg, flag: -m } }\n",
			"x.yaml:3:46: modes.headless.prompt.flag: only used with position: flag (position is arg)"},
		{"separator with flag", "command: a\nmodes:\n  headless: { prompt: { flag: -m, separator: '--' } }\n",
			"x.yaml:3:46: modes.headless.prompt.separator: only used with position: arg (position is flag)"},
		{"separator not an option", "command: a\nmodes:\n  headless: { prompt: { separator: end } }\n",
			`x.yaml:3:36: modes.headless.prompt.separator: must be an end-of-options marker such as "--", got "end"`},
		{"separator empty", "command: a\nmodes:\n  headless: { prompt: { separator: '' } }\n",
			"x.yaml:3:36: modes.headless.prompt.separator: must not be empty"},
		{"form with arg", "command: a\nmodes:\n  headless: { prompt: { form: equals } }\n",
			"x.yaml:3:31: modes.headless.prompt.form: only used with position: flag (position is arg)"},
		{"form unknown", "command: a\nmodes:\n  headless: { prompt: { flag: -m, form: glued } }\n",
			`x.yaml:3:41: modes.headless.prompt.form: must be "separate" or "equals", got "glued"`},
		{"allowLeadingDash with separator", "command: a\nmodes:\n  headless: { prompt: { separator: '--', allowLeadingDash: true } }\n",
			"x.yaml:3:60: modes.headless.prompt.allowLeadingDash: has no effect: with a separator or form: equals no prompt can be read as an option"},
		{"allowLeadingDash with equals", "command: a\nmodes:\n  headless: { prompt: { flag: -m, form: equals, allowLeadingDash: true } }\n",
			"x.yaml:3:67: modes.headless.prompt.allowLeadingDash: has no effect: with a separator or form: equals no prompt can be read as an option"},
		{"choose with spaces", "command: a\nmodes: { interactive: {} }\nautoPolicy:\n  handlers:\n    - { when: x, choose: ' Yes' }\n",
			`x.yaml:5:26: autoPolicy.handlers[0].choose: a menu label has no leading or trailing spaces, got " Yes"`},
		{"choose two lines", "command: a\nmodes: { interactive: {} }\nautoPolicy:\n  handlers:\n    - { when: x, choose: \"a\\nb\" }\n",
			`x.yaml:5:26: autoPolicy.handlers[0].choose: a menu label is one line, got "a\nb"`},
		{"choose and use", "command: a\nmodes: { interactive: {} }\nautoPolicy:\n  handlers:\n    - { when: x, choose: Yes, use: pressEnter }\n",
			"x.yaml:5:7: autoPolicy.handlers[0]: give one of send, use and choose, not more"},
		{"choose label via use", "command: a\nmodes: { interactive: {} }\nautoPolicy:\n  handlers:\n    - { when: x, use: 'choose:' }\n",
			`x.yaml:5:23: autoPolicy.handlers[0].use: handler "choose:": want the label of a menu option, as choose:LABEL`},
		{"answerSettle not a duration", "command: a\nmodes: { headless: {} }\nanswerSettle: soon\n",
			`x.yaml:3:15: answerSettle: invalid duration "soon": write it like "90s", "10m" or "1h30m"`},
		{"stuckAfter zero", "command: a\nmodes: { headless: {} }\nstuckAfter: 0s\n",
			"x.yaml:3:13: stuckAfter: must be a positive duration (an answer needs time to show)"},
		{"stuckAfter not a duration", "command: a\nmodes: { headless: {} }\nstuckAfter: soon\n",
			`x.yaml:3:13: stuckAfter: invalid duration "soon": write it like "90s", "10m" or "1h30m"`},
		{"allowLeadingDash with none", "command: a\nmodes:\n  headless: { prompt: { position: none, allowLeadingDash: true } }\n",
			"x.yaml:3:59: modes.headless.prompt.allowLeadingDash: has no effect: position is none"},
		{"allowLeadingDash type", "command: a\nmodes:\n  headless: { prompt: { allowLeadingDash: 1 } }\n",
			"x.yaml:3:43: modes.headless.prompt.allowLeadingDash: must be true or false"},
		{"prompt unknown key", "command: a\nmodes:\n  headless: { prompt: { sep: '--' } }\n",
			`x.yaml:3:25: modes.headless.prompt: unknown key "sep" (known: position, flag, form, separator, allowLeadingDash, required, longOnStdin)`},
		{"usePTY type", "command: a\nmodes:\n  headless: { usePTY: yes }\n",
			"x.yaml:3:23: modes.headless.usePTY: must be true or false"},
		{"closeStdin in PTY", "command: a\nmodes:\n  interactive: { closeStdin: true }\n",
			"x.yaml:3:30: modes.interactive.closeStdin: only for a headless mode without usePTY, and no longer used: remove it"},
		{"bad name", "name: 'a b'\ncommand: a\nmodes: { headless: {} }\n",
			`x.yaml:1:7: name: invalid adapter name "a b": use letters, digits, ".", "_" and "-", starting with a letter or a digit`},
		{"negative duration", "command: a\nmodes: { headless: {} }\ninactivityTimeout: -1s\n",
			"x.yaml:3:20: inactivityTimeout: must not be negative"},
		{"rows zero", "command: a\nmodes: { headless: {} }\nrows: 0\n",
			"x.yaml:3:7: rows: must be from 1 to 10000"},
		{"env list", "command: a\nmodes: { headless: {} }\nenv: [A]\n",
			"x.yaml:3:6: env: must be a map of strings"},
		{"env bad name", "command: a\nmodes: { headless: {} }\nenv: { 'A=B': x }\n",
			`x.yaml:3:8: env: invalid environment variable name "A=B"`},
		{"arg null", "command: a\nmodes:\n  headless: { args: [a, ~] }\n",
			"x.yaml:3:25: modes.headless.args[1]: must be a string"},
		{"handler bad arg", "command: a\nmodes: { headless: {} }\nautoPolicy: { handlers: [ { when: x, use: 'select:0' } ] }\n",
			`x.yaml:3:43: autoPolicy.handlers[0].use: handler "select:0": want an option number 1..9, got "0"`},
		{"handler no when", "command: a\nmodes: { headless: {} }\nautoPolicy: { handlers: [ { send: x } ] }\n",
			`x.yaml:3:27: autoPolicy.handlers[0]: missing required key "when"`},
		{"handler empty send", "command: a\nmodes: { headless: {} }\nautoPolicy: { handlers: [ { when: x, send: '' } ] }\n",
			"x.yaml:3:44: autoPolicy.handlers[0].send: must not be empty"},
		{"version empty args", "command: a\nmodes: { headless: {} }\nversion: { args: [] }\n",
			"x.yaml:3:18: version.args: must not be empty: the arguments that make the command print its version (default [--version])"},
		{"version empty tested", "command: a\nmodes: { headless: {} }\nversion: { tested: '' }\n",
			"x.yaml:3:20: version.tested: must not be empty"},
		{"version unknown key", "command: a\nmodes: { headless: {} }\nversion: { tested: '1', arg: [-v] }\n",
			`x.yaml:3:25: version: unknown key "arg" (did you mean "args"?)`},
		{"version not a mapping", "command: a\nmodes: { headless: {} }\nversion: 1.2.3\n",
			`x.yaml:3:10: version: must be a mapping such as { tested: "1.2.3", args: [--version] }`},
		{"auth env not a list", "command: a\nmodes: { headless: {} }\nauth: { env: KEY }\n",
			"x.yaml:3:14: auth.env: must be a list of environment variable names"},
		{"auth env bad name", "command: a\nmodes: { headless: {} }\nauth: { env: [A, 'B=C', ~, A] }\n",
			"x.yaml:3:18: auth.env[1]: invalid environment variable name \"B=C\"\nx.yaml:3:25: auth.env[2]: must not be empty\nx.yaml:3:28: auth.env[3]: A is listed twice"},
		{"auth unknown key", "command: a\nmodes: { headless: {} }\nauth: { envs: [A] }\n",
			`x.yaml:3:9: auth: unknown key "envs" (did you mean "env"?)`},
		{"file name as name", "command: a\nmodes: { headless: {} }\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseDefinition("x.yaml", []byte(c.src))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestParseFull(t *testing.T) {
	src := `# a comment
command: aider
description: Aider
modes:
  interactive: { args: [], prompt: { flag: --message } }
  headless:
    args: [--yes-always, --no-pretty, 5]
    prompt: { position: flag, flag: --message }
    usePTY: true
cols: 100
rows: 30
quietPeriod: 300ms
inactivityTimeout: 10m
env: { A: "1", B: 2, C: }
states:
  - name: interaction_handler
    pattern: '\(Y\)es/\(N\)o'
  - { name: interaction_idle, pattern: '(?m)^> $' }
defaults: &args [--x]
autoPolicy:
  injectArgs: [--yes-always]
  handlers:
    - { when: '\(Y\)es/\(N\)o', send: "y\r" }
    - { when: 'Continue\?', use: pressEnter }
`
	// An unknown top-level key holding an anchor is still an error: the
	// schema has no place for shared snippets.
	if _, err := parseDefinition("/x/.vibeteam/adapters/aider.yaml", []byte(src)); err == nil ||
		!strings.Contains(err.Error(), `aider.yaml:19:1: unknown key "defaults"`) {
		t.Fatalf("got %v", err)
	}
	src = strings.Replace(src, "defaults: &args [--x]\n", "", 1)
	d, err := parseDefinition("/x/.vibeteam/adapters/aider.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if d.name != "aider" {
		t.Errorf("name from the file name: got %q", d.name)
	}
	if d.command != "aider" || d.description != "Aider" || d.cols != 100 || d.rows != 30 ||
		d.quietPeriod != 300*time.Millisecond || d.inactivityTimeout != 10*time.Minute {
		t.Errorf("scalars: %+v", d)
	}
	if got := d.env; len(got) != 3 || got["A"] != "1" || got["B"] != "2" || got["C"] != "" {
		t.Errorf("env = %v", got)
	}
	in, hl := d.modes[Interactive], d.modes[Headless]
	if in.prompt.position != PromptFlag || in.prompt.flag != "--message" || in.prompt.form != PromptFormSeparate || !in.usePTY {
		t.Errorf("interactive = %+v (a flag alone implies position flag)", in)
	}
	if strings.Join(hl.args, " ") != "--yes-always --no-pretty 5" || !hl.usePTY {
		t.Errorf("headless = %+v", hl)
	}
	if len(d.states) != 2 || d.states[0].Name != "interaction_handler" || !d.states[1].Pattern.MatchString("x\n> \ny") {
		t.Errorf("states = %+v", d.states)
	}
	if d.policy == nil || len(d.policy.Handlers) != 2 || d.policy.Handlers[0].Send != "y\r" || d.policy.Handlers[1].Use != "pressEnter" {
		t.Errorf("policy = %+v", d.policy)
	}
}

func TestParsePromptForms(t *testing.T) {
	src := `command: a
modes:
  headless: { prompt: { separator: "--" } }
  interactive: { prompt: { flag: --message, form: equals } }
`
	d, err := parseDefinition("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.modes[Headless].prompt, (promptSpec{position: PromptArg, separator: "--"}); got != want {
		t.Errorf("headless prompt %+v, want %+v", got, want)
	}
	if got, want := d.modes[Interactive].prompt, (promptSpec{position: PromptFlag, flag: "--message", form: PromptFormEquals}); got != want {
		t.Errorf("interactive prompt %+v, want %+v", got, want)
	}
	src = `command: a
modes:
  headless: { prompt: { allowLeadingDash: true } }
  interactive: { prompt: { flag: -m, form: separate, allowLeadingDash: false } }
`
	if d, err = parseDefinition("x.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if got, want := d.modes[Headless].prompt, (promptSpec{position: PromptArg, allowLeadingDash: true}); got != want {
		t.Errorf("headless prompt %+v, want %+v", got, want)
	}
	if got, want := d.modes[Interactive].prompt, (promptSpec{position: PromptFlag, flag: "-m", form: PromptFormSeparate}); got != want {
		t.Errorf("interactive prompt %+v, want %+v", got, want)
	}
}

func TestParseDefaults(t *testing.T) {
	d, err := parseDefinition("min.yml", []byte("command: m\nmodes: { headless: }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.name != "min" || d.cols != DefaultCols || d.rows != DefaultRows || d.quietPeriod != DefaultQuietPeriod ||
		d.inactivityTimeout != 0 || d.policy != nil || len(d.states) != 0 {
		t.Errorf("defaults: %+v", d)
	}
	if m := d.modes[Headless]; m.prompt != (promptSpec{position: PromptArg}) || m.usePTY {
		t.Errorf("headless defaults: %+v", m)
	}
	if _, ok := d.modes[Interactive]; ok {
		t.Error("interactive mode appeared from nowhere")
	}
}

func TestFileErrorFormat(t *testing.T) {
	cases := []struct {
		e    FileError
		want string
	}{
		{FileError{Pos: yamlnode.Pos{File: "f", Line: 1, Col: 2}, Field: "a.b", Msg: "m"}, "f:1:2: a.b: m"},
		{FileError{Pos: yamlnode.Pos{File: "f", Line: 3}, Msg: "m"}, "f:3: m"},
		{FileError{Pos: yamlnode.Pos{File: "f"}, Msg: "m"}, "f: m"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	var empty ErrorList
	if errorOf(empty) != nil {
		t.Error("an empty ErrorList must be a nil error")
	}
}

// closeStdin is no longer read (the engine closes a headless task's stdin
// itself) but files written for earlier versions still load: the key is
// accepted and ignored, and checked as it always was, so that no file that
// was refused loads now.
func TestDeprecatedCloseStdin(t *testing.T) {
	for _, src := range []string{
		"command: a\nmodes:\n  headless: { closeStdin: true }\n",
		"command: a\nmodes:\n  headless: { closeStdin: false, usePTY: true }\n",
		"command: a\nmodes:\n  interactive: { closeStdin: false }\n",
	} {
		d, err := parseDefinition("x.yaml", []byte(src))
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if _, ok := d.modes[Headless]; !ok && strings.Contains(src, "headless") {
			t.Errorf("%q: no headless mode", src)
		}
	}
	for src, want := range map[string]string{
		"command: a\nmodes:\n  headless: { closeStdin: yes }\n":                "x.yaml:3:27: modes.headless.closeStdin: must be true or false",
		"command: a\nmodes:\n  headless: { closeStdin: }\n":                    "x.yaml:3:27: modes.headless.closeStdin: must be true or false",
		"command: a\nmodes:\n  headless: { usePTY: true, closeStdin: true }\n": "x.yaml:3:41: modes.headless.closeStdin: only for a headless mode without usePTY, and no longer used: remove it",
		// A deprecated key is not offered as a correction.
		"command: a\nmodes:\n  headless: { closeStdn: true }\n": `x.yaml:3:15: modes.headless: unknown key "closeStdn" (known: args, prompt, usePTY, output, resume, allow)`,
	} {
		_, err := parseDefinition("x.yaml", []byte(src))
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", src, err, want)
		}
	}
}

// version and auth are only read here, for vibeteam doctor: their values, the
// defaults, and an adapter without them.
func TestVersionAndAuthKeys(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		version *VersionCheck
		auth    Auth
	}{
		{"absent", "", nil, Auth{}},
		{"null", "version:\nauth:\n", &VersionCheck{Args: []string{"--version"}}, Auth{}},
		{"empty", "version: {}\nauth: {}\n", &VersionCheck{Args: []string{"--version"}}, Auth{}},
		{"tested only", "version: { tested: 2.1.197 }\n", &VersionCheck{Tested: "2.1.197", Args: []string{"--version"}}, Auth{}},
		{"args", "version: { tested: '1.0', args: [version, --short] }\n", &VersionCheck{Tested: "1.0", Args: []string{"version", "--short"}}, Auth{}},
		{"auth", "auth: { env: [A_KEY, B_TOKEN], note: or log in }\n", nil, Auth{Env: []string{"A_KEY", "B_TOKEN"}, Note: "or log in"}},
		{"auth note only", "auth: { env: [], note: in its own config }\n", nil, Auth{Note: "in its own config"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, err := Parse("x.yaml", []byte("command: a\nmodes: { headless: {} }\n"+c.src))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(info.Version, c.version) {
				t.Errorf("Version = %+v, want %+v", info.Version, c.version)
			}
			if len(info.Auth.Env) == 0 {
				info.Auth.Env = nil
			}
			if !reflect.DeepEqual(info.Auth, c.auth) {
				t.Errorf("Auth = %+v, want %+v", info.Auth, c.auth)
			}
		})
	}
}

// Info hands out copies: changing one changes nothing the registry holds.
func TestInfoVersionAndAuthAreCopies(t *testing.T) {
	r := NewRegistry()
	claude := func() Info {
		for _, i := range r.Info() {
			if i.Name == "claude" {
				return i
			}
		}
		t.Fatal("no claude")
		return Info{}
	}
	i := claude()
	if i.Version == nil || len(i.Version.Args) == 0 || len(i.Auth.Env) == 0 {
		t.Fatalf("claude: version %+v, auth %+v", i.Version, i.Auth)
	}
	i.Version.Args[0], i.Auth.Env[0] = "changed", "changed"
	if j := claude(); j.Version.Args[0] == "changed" || j.Auth.Env[0] == "changed" {
		t.Errorf("the registry's definition changed: %+v %+v", j.Version, j.Auth)
	}
}
