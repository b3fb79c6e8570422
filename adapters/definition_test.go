package adapters

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/handlers"
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
		"bad.yaml:3:14: description: want a string, got a list",
		"bad.yaml:5:38: modes.interactive.usePTY: interactive mode always runs in a PTY",
		"bad.yaml:6:3: modes.batch: unknown key (known: headless, interactive)",
		`bad.yaml:8:11: modes.headless.args: want a list of strings, got "foo"`,
		`bad.yaml:9:25: modes.headless.prompt.position: want arg, flag or none, got "middle"`,
		`bad.yaml:10:7: cols: want a whole number from 1 to 10000, got "wide"`,
		`bad.yaml:11:14: quietPeriod: want a duration such as 150ms or 2m: time: invalid duration "soon"`,
		"bad.yaml:13:28: states[0].pattern: error parsing regexp: missing closing ): `(`",
		"bad.yaml:14:5: states[1].name: required",
		`bad.yaml:15:5: states[2]: want a mapping, got "just-a-string"`,
		"bad.yaml:18:7: autoPolicy.handlers[0]: give send or use, not both",
		"bad.yaml:19:7: autoPolicy.handlers[1]: needs send (keys) or use (a handler such as pressEnter or select:1)",
		// Other tests may register handlers, so the known list is not fixed.
		`bad.yaml:20:25: autoPolicy.handlers[2].use: unknown handler "frobnicate" (known: ` + strings.Join(handlers.Names(), ", ") + ")",
		"bad.yaml:21:15: autoPolicy.handlers[3].when: error parsing regexp: missing closing ]: `[`",
		"bad.yaml:22:3: autoPolicy.extra: unknown key (known: handlers, injectArgs)",
		"bad.yaml:23:1: colour: unknown key (known: autoPolicy, cols, command, description, env, inactivityTimeout, modes, name, quietPeriod, rows, states, stuckAfter)",
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
		{"syntax", "command: a\n  b: [\n", "x.yaml:2: mapping values are not allowed in this context"},
		{"empty", "", "x.yaml:1:1: empty adapter file"},
		{"not a mapping", "- a\n", "x.yaml:1:1: want a mapping, got a list"},
		{"missing command", "modes: { headless: {} }\n", "x.yaml:1:1: command: required"},
		{"missing modes", "command: a\n", "x.yaml:1:1: modes: required: at least one of interactive, headless"},
		{"empty modes", "command: a\nmodes: {}\n", "x.yaml:2:8: modes: want at least one of interactive, headless"},
		{"duplicate key", "command: a\nmodes: { headless: {} }\ncommand: b\n", "x.yaml:3:1: command: duplicate key (first at line 1)"},
		{"flag without flag", "command: a\nmodes:\n  headless: { prompt: { position: flag } }\n",
			"x.yaml:3:35: modes.headless.prompt.flag: required when position is flag"},
		{"flag with arg", "command: a\nmodes:\n  headless: { prompt: { position: arg, flag: -m } }\n",
			"x.yaml:3:46: modes.headless.prompt.flag: only used with position: flag (position is arg)"},
		{"separator with flag", "command: a\nmodes:\n  headless: { prompt: { flag: -m, separator: '--' } }\n",
			"x.yaml:3:46: modes.headless.prompt.separator: only used with position: arg (position is flag)"},
		{"separator not an option", "command: a\nmodes:\n  headless: { prompt: { separator: end } }\n",
			`x.yaml:3:36: modes.headless.prompt.separator: want an end-of-options marker such as "--", got "end"`},
		{"separator empty", "command: a\nmodes:\n  headless: { prompt: { separator: '' } }\n",
			"x.yaml:3:36: modes.headless.prompt.separator: must not be empty"},
		{"form with arg", "command: a\nmodes:\n  headless: { prompt: { form: equals } }\n",
			"x.yaml:3:31: modes.headless.prompt.form: only used with position: flag (position is arg)"},
		{"form unknown", "command: a\nmodes:\n  headless: { prompt: { flag: -m, form: glued } }\n",
			`x.yaml:3:41: modes.headless.prompt.form: want separate (flag PROMPT) or equals (flag=PROMPT), got "glued"`},
		{"allowLeadingDash with separator", "command: a\nmodes:\n  headless: { prompt: { separator: '--', allowLeadingDash: true } }\n",
			"x.yaml:3:60: modes.headless.prompt.allowLeadingDash: has no effect: with a separator or form: equals no prompt can be read as an option"},
		{"allowLeadingDash with equals", "command: a\nmodes:\n  headless: { prompt: { flag: -m, form: equals, allowLeadingDash: true } }\n",
			"x.yaml:3:67: modes.headless.prompt.allowLeadingDash: has no effect: with a separator or form: equals no prompt can be read as an option"},
		{"stuckAfter zero", "command: a\nmodes: { headless: {} }\nstuckAfter: 0s\n",
			"x.yaml:3:13: stuckAfter: must be more than 0 (an answer needs time to show)"},
		{"stuckAfter not a duration", "command: a\nmodes: { headless: {} }\nstuckAfter: soon\n",
			`x.yaml:3:13: stuckAfter: want a duration such as 150ms or 2m: time: invalid duration "soon"`},
		{"allowLeadingDash with none", "command: a\nmodes:\n  headless: { prompt: { position: none, allowLeadingDash: true } }\n",
			"x.yaml:3:59: modes.headless.prompt.allowLeadingDash: has no effect: position is none"},
		{"allowLeadingDash type", "command: a\nmodes:\n  headless: { prompt: { allowLeadingDash: 1 } }\n",
			`x.yaml:3:43: modes.headless.prompt.allowLeadingDash: want true or false, got "1"`},
		{"prompt unknown key", "command: a\nmodes:\n  headless: { prompt: { sep: '--' } }\n",
			"x.yaml:3:25: modes.headless.prompt.sep: unknown key (known: allowLeadingDash, flag, form, position, required, separator)"},
		{"usePTY type", "command: a\nmodes:\n  headless: { usePTY: yes }\n",
			`x.yaml:3:23: modes.headless.usePTY: want true or false, got "yes"`},
		{"closeStdin in PTY", "command: a\nmodes:\n  interactive: { closeStdin: true }\n",
			"x.yaml:3:30: modes.interactive.closeStdin: only for a headless mode without usePTY"},
		{"bad name", "name: 'a b'\ncommand: a\nmodes: { headless: {} }\n",
			`x.yaml:1:7: name: "a b" is not a valid adapter name (letters, digits, '.', '_', '-')`},
		{"negative duration", "command: a\nmodes: { headless: {} }\ninactivityTimeout: -1s\n",
			"x.yaml:3:20: inactivityTimeout: must not be negative"},
		{"rows zero", "command: a\nmodes: { headless: {} }\nrows: 0\n",
			`x.yaml:3:7: rows: want a whole number from 1 to 10000, got "0"`},
		{"env list", "command: a\nmodes: { headless: {} }\nenv: [A]\n",
			"x.yaml:3:6: env: want a mapping of NAME: value, got a list"},
		{"env bad name", "command: a\nmodes: { headless: {} }\nenv: { 'A=B': x }\n",
			"x.yaml:3:8: env.A=B: invalid environment variable name"},
		{"arg null", "command: a\nmodes:\n  headless: { args: [a, ~] }\n",
			"x.yaml:3:25: modes.headless.args[1]: want a string, got nothing"},
		{"handler bad arg", "command: a\nmodes: { headless: {} }\nautoPolicy: { handlers: [ { when: x, use: 'select:0' } ] }\n",
			`x.yaml:3:43: autoPolicy.handlers[0].use: handler "select:0": want an option number 1..9, got "0"`},
		{"handler no when", "command: a\nmodes: { headless: {} }\nautoPolicy: { handlers: [ { send: x } ] }\n",
			"x.yaml:3:27: autoPolicy.handlers[0].when: required"},
		{"handler empty send", "command: a\nmodes: { headless: {} }\nautoPolicy: { handlers: [ { when: x, send: '' } ] }\n",
			"x.yaml:3:44: autoPolicy.handlers[0].send: must not be empty"},
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
		!strings.Contains(err.Error(), "aider.yaml:19:1: defaults: unknown key") {
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
	if m := d.modes[Headless]; m.prompt != (promptSpec{position: PromptArg}) || m.usePTY || m.closeStdin {
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
		{FileError{File: "f", Line: 1, Col: 2, Field: "a.b", Msg: "m"}, "f:1:2: a.b: m"},
		{FileError{File: "f", Line: 3, Msg: "m"}, "f:3: m"},
		{FileError{File: "f", Msg: "m"}, "f: m"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	var empty ErrorList
	if empty.err() != nil {
		t.Error("an empty ErrorList must be a nil error")
	}
}
