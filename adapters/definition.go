package adapters

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/handlers"
	"github.com/vibeteam/vibeteam/internal/source"
)

// An adapter file (built-in, or <baseDir>/.vibeteam/adapters/<name>.yaml):
//
//	name: aider              # default: the file's base name
//	command: aider           # required
//	description: ...
//	modes:                   # at least one
//	  interactive: { args: [], prompt: { flag: --message, form: equals } }
//	  headless:
//	    args: [--yes-always]
//	    prompt:
//	      position: arg      # arg (default) | flag (needs flag) | none
//	      separator: "--"    # arg only: emitted just before the prompt
//	      # flag: --message  # flag only
//	      # form: separate   # flag only: separate (`--message PROMPT`) | equals (`--message=PROMPT`)
//	      # allowLeadingDash: true  # see below
//	      # required: true   # the CLI cannot run without one (sh -c)
//	    usePTY: false        # headless only; interactive always has a PTY
//	    closeStdin: true     # headless without a PTY only
//	cols: 120                # PTY size
//	rows: 40
//	quietPeriod: 150ms
//	inactivityTimeout: 10m   # default: none
//	env: { KEY: value }      # under the task's env
//	states:                  # ordered; first match on the rendered screen wins
//	  - { name: interaction_idle, pattern: '(?m)^> $' }
//	autoPolicy:
//	  injectArgs: [--yes-always]
//	  handlers:              # each: when + exactly one of send, use
//	    - { when: '\(Y\)es/\(N\)o', send: "y\r" }
//	    - { when: 'Continue\?', use: pressEnter }
//
// The argv is, in this order:
//
//	command  args  extraArgs  injectArgs  prompt
//
// injectArgs only with --auto-approve (Options.AutoApprove), and prompt is
// one of `PROMPT`, `SEPARATOR PROMPT`, `FLAG PROMPT` or `FLAG=PROMPT`
// (nothing when the prompt is empty). The prompt is last because after a
// separator every element is positional, and so no variadic option in
// extraArgs or injectArgs can take it as one of its values.
//
// A prompt is text, never an option: a rendered prompt starting with "-"
// given as a bare argument or as a separate flag value could be parsed as
// one (`--dangerously-skip-permissions`), so LaunchConfig refuses it unless
// the mode has allowLeadingDash: true, for a CLI known to take such a value
// as text. A separator or form: equals makes every prompt safe.

// Defaults for fields an adapter file may leave out.
const (
	DefaultCols        = 120
	DefaultRows        = 40
	DefaultQuietPeriod = 150 * time.Millisecond
	// DefaultStuckAfter: how long an answered question may stay on screen
	// with no output at all before a person is asked about it.
	DefaultStuckAfter = 10 * time.Second
)

// Prompt positions: where LaunchConfig puts the prompt in argv.
const (
	PromptArg  = "arg"  // appended last, as a positional argument
	PromptFlag = "flag" // appended last as `flag prompt`
	PromptNone = "none" // the mode takes no prompt
)

// Prompt flag forms: how a flag and the prompt are put in argv.
const (
	PromptFormSeparate = "separate" // two elements: `flag prompt`
	PromptFormEquals   = "equals"   // one element: `flag=prompt`
)

// definition is one parsed adapter file. It is never mutated after parsing,
// so every instance of the type can share it.
type definition struct {
	name              string
	command           string
	description       string
	modes             map[Mode]modeSpec
	cols, rows        int
	quietPeriod       time.Duration
	inactivityTimeout time.Duration
	stuckAfter        time.Duration
	env               map[string]string
	states            []State
	policy            *AutoPolicy // nil when the file has no autoPolicy
}

type modeSpec struct {
	args       []string
	prompt     promptSpec
	usePTY     bool
	closeStdin bool
}

// promptSpec says where and how the prompt goes in argv (see the file
// comment).
type promptSpec struct {
	position         string // PromptArg, PromptFlag or PromptNone
	flag             string // PromptFlag only
	form             string // PromptFlag only: PromptFormSeparate or PromptFormEquals
	separator        string // PromptArg only; "" for none
	allowLeadingDash bool
	// required: the command cannot run without a prompt (sh -c), so a task
	// without one is refused before anything starts.
	required bool
}

// optionSafe reports whether every prompt, whatever its first character,
// reaches the CLI as text rather than as a possible option.
func (s promptSpec) optionSafe() bool {
	switch s.position {
	case PromptArg:
		return s.separator != ""
	case PromptFlag:
		return s.form == PromptFormEquals
	}
	return true
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// parseDefinition parses one adapter file. file names the file in errors; its
// base name (without extension) is the adapter name when the file has no
// `name`. Every problem of the file is reported, as an ErrorList.
func parseDefinition(file string, data []byte) (*definition, error) {
	p := &parser{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.errs = append(p.errs, yamlSyntaxError(file, err, data))
		return nil, p.errs.err()
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.errs = append(p.errs, &FileError{File: file, Line: 1, Col: 1, Msg: "empty adapter file"})
		return nil, p.errs.err()
	}
	d := p.definition(doc.Content[0])
	if err := p.errs.err(); err != nil {
		return nil, err
	}
	if d.name == "" {
		d.name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		if !namePattern.MatchString(d.name) {
			return nil, ErrorList{{File: file, Line: 1, Col: 1, Field: "name",
				Msg: fmt.Sprintf("file name %q is not a valid adapter name; add a name key", d.name)}}
		}
	}
	return d, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlSyntaxError turns yaml.v3's "yaml: line N: msg" into a FileError, so
// syntax errors are located like every other error.
func yamlSyntaxError(file string, err error, data []byte) *FileError {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FileError{File: file, Line: line, Msg: m[2]}
	}
	fe := &FileError{File: file, Msg: strings.TrimPrefix(msg, "yaml: ")}
	// An undefined alias comes without a position; find it in the text.
	if m := yamlAlias.FindStringSubmatch(msg); m != nil {
		if off := source.AliasOffset(data, m[1]); off >= 0 {
			fe.Line = 1 + bytes.Count(data[:off], []byte("\n"))
			fe.Col = 1 + utf8.RuneCount(data[bytes.LastIndexByte(data[:off], '\n')+1:off])
		}
	}
	return fe
}

var yamlAlias = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// parser walks yaml.Node trees rather than decoding into structs, because
// struct decoding stops at the first error and loses the positions of
// unknown keys.
type parser struct {
	file string
	errs ErrorList
}

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	p.errs = append(p.errs, &FileError{File: p.file, Line: n.Line, Col: n.Column, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported node"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// fields walks a mapping, calling the handler of each known key with the key
// and value nodes, and reports unknown and duplicate keys. It returns the
// keys seen, so callers can check required ones. A null value counts as an
// empty mapping, so `autoPolicy:` with nothing under it is not an error.
func (p *parser) fields(n *yaml.Node, path string, known map[string]func(k, v *yaml.Node)) map[string]*yaml.Node {
	n = resolve(n)
	seen := map[string]*yaml.Node{}
	if isNull(n) {
		return seen
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "want a mapping, got %s", kindName(n))
		return seen
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if first, dup := seen[k.Value]; dup {
			p.errorf(k, join(path, k.Value), "duplicate key (first at line %d)", first.Line)
			continue
		}
		seen[k.Value] = k
		f, ok := known[k.Value]
		if !ok {
			names := make([]string, 0, len(known))
			for name := range known {
				names = append(names, name)
			}
			sort.Strings(names)
			p.errorf(k, join(path, k.Value), "unknown key (known: %s)", strings.Join(names, ", "))
			continue
		}
		f(k, v)
	}
	return seen
}

// str reads a scalar as a string. Any scalar tag is accepted (a `send: 1`
// is the key "1"); null is the empty string.
func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, field, "want a string, got %s", kindName(n))
		return "", false
	}
	if isNull(n) {
		return "", true
	}
	return n.Value, true
}

func (p *parser) nonEmpty(n *yaml.Node, field string) (string, bool) {
	s, ok := p.str(n, field)
	if ok && s == "" {
		p.errorf(n, field, "must not be empty")
		return "", false
	}
	return s, ok
}

func (p *parser) strings(n *yaml.Node, field string) []string {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, field, "want a list of strings, got %s", kindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		e = resolve(e)
		f := fmt.Sprintf("%s[%d]", field, i)
		if isNull(e) {
			p.errorf(e, f, "want a string, got nothing")
			continue
		}
		if s, ok := p.str(e, f); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		p.errorf(n, field, "want true or false, got %s", kindName(n))
		return false, false
	}
	return b, true
}

func (p *parser) size(n *yaml.Node, field string) (int, bool) {
	i, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil || i < 1 || i > 10000 {
		p.errorf(n, field, "want a whole number from 1 to 10000, got %s", kindName(n))
		return 0, false
	}
	return i, true
}

func (p *parser) duration(n *yaml.Node, field string) (time.Duration, bool) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		p.errorf(n, field, "want a duration such as 150ms or 2m, got %s", kindName(n))
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		p.errorf(n, field, "want a duration such as 150ms or 2m: %v", err)
		return 0, false
	}
	if d < 0 {
		p.errorf(n, field, "must not be negative")
		return 0, false
	}
	return d, true
}

func (p *parser) regexp(n *yaml.Node, field string) *regexp.Regexp {
	s, ok := p.nonEmpty(n, field)
	if !ok {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		p.errorf(n, field, "%v", err)
		return nil
	}
	return re
}

func (p *parser) definition(root *yaml.Node) *definition {
	d := &definition{
		cols:        DefaultCols,
		rows:        DefaultRows,
		quietPeriod: DefaultQuietPeriod,
		stuckAfter:  DefaultStuckAfter,
		modes:       map[Mode]modeSpec{},
	}
	seen := p.fields(root, "", map[string]func(k, v *yaml.Node){
		"name": func(k, v *yaml.Node) {
			if s, ok := p.nonEmpty(v, "name"); ok {
				if !namePattern.MatchString(s) {
					p.errorf(v, "name", "%q is not a valid adapter name (letters, digits, '.', '_', '-')", s)
					return
				}
				d.name = s
			}
		},
		"command": func(k, v *yaml.Node) {
			if s, ok := p.nonEmpty(v, "command"); ok {
				d.command = s
			}
		},
		"description": func(k, v *yaml.Node) { d.description, _ = p.str(v, "description") },
		"modes":       func(k, v *yaml.Node) { p.modes(v, d) },
		"cols": func(k, v *yaml.Node) {
			if i, ok := p.size(v, "cols"); ok {
				d.cols = i
			}
		},
		"rows": func(k, v *yaml.Node) {
			if i, ok := p.size(v, "rows"); ok {
				d.rows = i
			}
		},
		"quietPeriod": func(k, v *yaml.Node) {
			if t, ok := p.duration(v, "quietPeriod"); ok {
				d.quietPeriod = t
			}
		},
		"inactivityTimeout": func(k, v *yaml.Node) { d.inactivityTimeout, _ = p.duration(v, "inactivityTimeout") },
		"stuckAfter": func(k, v *yaml.Node) {
			if t, ok := p.duration(v, "stuckAfter"); ok {
				if t == 0 {
					p.errorf(v, "stuckAfter", "must be more than 0 (an answer needs time to show)")
					return
				}
				d.stuckAfter = t
			}
		},
		"env":        func(k, v *yaml.Node) { d.env = p.env(v, "env") },
		"states":     func(k, v *yaml.Node) { d.states = p.states(v) },
		"autoPolicy": func(k, v *yaml.Node) { d.policy = p.policy(v) },
	})
	root = resolve(root)
	if root.Kind == yaml.MappingNode {
		if _, ok := seen["command"]; !ok {
			p.errorf(root, "command", "required")
		}
		if _, ok := seen["modes"]; !ok {
			p.errorf(root, "modes", "required: at least one of interactive, headless")
		}
	}
	return d
}

func (p *parser) modes(n *yaml.Node, d *definition) {
	n = resolve(n)
	mode := func(m Mode) func(k, v *yaml.Node) {
		return func(k, v *yaml.Node) { d.modes[m] = p.mode(v, "modes."+string(m), m) }
	}
	p.fields(n, "modes", map[string]func(k, v *yaml.Node){
		string(Interactive): mode(Interactive),
		string(Headless):    mode(Headless),
	})
	if (n.Kind == yaml.MappingNode && len(n.Content) == 0) || isNull(n) {
		p.errorf(n, "modes", "want at least one of interactive, headless")
	}
}

func (p *parser) mode(n *yaml.Node, path string, m Mode) modeSpec {
	spec := modeSpec{prompt: promptSpec{position: PromptArg}, usePTY: m == Interactive}
	var ptyNode, closeNode *yaml.Node
	p.fields(n, path, map[string]func(k, v *yaml.Node){
		"closeStdin": func(k, v *yaml.Node) {
			if b, ok := p.boolean(v, join(path, "closeStdin")); ok {
				spec.closeStdin, closeNode = b, v
			}
		},
		"args":   func(k, v *yaml.Node) { spec.args = p.strings(v, join(path, "args")) },
		"prompt": func(k, v *yaml.Node) { spec.prompt = p.prompt(v, join(path, "prompt")) },
		"usePTY": func(k, v *yaml.Node) {
			if b, ok := p.boolean(v, join(path, "usePTY")); ok {
				spec.usePTY, ptyNode = b, v
			}
		},
	})
	if m == Interactive && ptyNode != nil && !spec.usePTY {
		p.errorf(ptyNode, join(path, "usePTY"), "interactive mode always runs in a PTY")
	}
	if closeNode != nil && spec.closeStdin && spec.usePTY {
		// A PTY's input is the terminal; there is no pipe to close.
		p.errorf(closeNode, join(path, "closeStdin"), "only for a headless mode without usePTY")
	}
	return spec
}

func (p *parser) prompt(n *yaml.Node, path string) promptSpec {
	var spec promptSpec
	var posNode, flagNode, formNode, sepNode, dashNode, reqNode *yaml.Node
	p.fields(n, path, map[string]func(k, v *yaml.Node){
		"position": func(k, v *yaml.Node) {
			s, ok := p.str(v, join(path, "position"))
			if !ok {
				return
			}
			switch s {
			case PromptArg, PromptFlag, PromptNone:
				spec.position, posNode = s, v
			default:
				p.errorf(v, join(path, "position"), "want arg, flag or none, got %q", s)
			}
		},
		"flag": func(k, v *yaml.Node) {
			if s, ok := p.nonEmpty(v, join(path, "flag")); ok {
				spec.flag, flagNode = s, v
			}
		},
		"form": func(k, v *yaml.Node) {
			s, ok := p.str(v, join(path, "form"))
			if !ok {
				return
			}
			switch s {
			case PromptFormSeparate, PromptFormEquals:
				spec.form, formNode = s, v
			default:
				p.errorf(v, join(path, "form"), "want separate (flag PROMPT) or equals (flag=PROMPT), got %q", s)
			}
		},
		"separator": func(k, v *yaml.Node) {
			s, ok := p.nonEmpty(v, join(path, "separator"))
			if !ok {
				return
			}
			// A separator not starting with "-" would itself be a
			// positional argument: most likely a typo for "--".
			if !strings.HasPrefix(s, "-") {
				p.errorf(v, join(path, "separator"), "want an end-of-options marker such as \"--\", got %q", s)
				return
			}
			spec.separator, sepNode = s, v
		},
		"allowLeadingDash": func(k, v *yaml.Node) {
			if b, ok := p.boolean(v, join(path, "allowLeadingDash")); ok {
				spec.allowLeadingDash, dashNode = b, v
			}
		},
		"required": func(k, v *yaml.Node) {
			if b, ok := p.boolean(v, join(path, "required")); ok {
				spec.required, reqNode = b, v
			}
		},
	})
	switch {
	case spec.position == "" && spec.flag != "":
		// A flag alone says where the prompt goes; demanding
		// `position: flag` too would only be noise.
		spec.position = PromptFlag
	case spec.position == "":
		spec.position = PromptArg
	case spec.position == PromptFlag && spec.flag == "":
		p.errorf(posNode, join(path, "flag"), "required when position is flag")
	}
	if spec.position == PromptFlag && spec.form == "" {
		spec.form = PromptFormSeparate
	}
	// Keys that would have no effect are errors: a user who wrote them
	// expects an effect.
	onlyWith := func(key *yaml.Node, name, want string) {
		if key != nil && spec.position != want {
			p.errorf(key, join(path, name), "only used with position: %s (position is %s)", want, spec.position)
		}
	}
	onlyWith(flagNode, "flag", PromptFlag)
	onlyWith(formNode, "form", PromptFlag)
	onlyWith(sepNode, "separator", PromptArg)
	if dashNode != nil && spec.position != PromptNone && spec.optionSafe() {
		p.errorf(dashNode, join(path, "allowLeadingDash"), "has no effect: with a separator or form: equals no prompt can be read as an option")
	} else if dashNode != nil && spec.position == PromptNone {
		p.errorf(dashNode, join(path, "allowLeadingDash"), "has no effect: position is none")
	}
	if reqNode != nil && spec.required && spec.position == PromptNone {
		p.errorf(reqNode, join(path, "required"), "contradicts position: none, which takes no prompt")
	}
	return spec
}

func (p *parser) env(n *yaml.Node, path string) map[string]string {
	env := map[string]string{}
	n = resolve(n)
	if isNull(n) {
		return env
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "want a mapping of NAME: value, got %s", kindName(n))
		return env
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		field := join(path, k.Value)
		if k.Kind != yaml.ScalarNode || k.Value == "" || strings.ContainsAny(k.Value, "=\x00") {
			p.errorf(k, field, "invalid environment variable name")
			continue
		}
		if _, dup := env[k.Value]; dup {
			p.errorf(k, field, "duplicate key")
			continue
		}
		if s, ok := p.str(v, field); ok {
			env[k.Value] = s
		}
	}
	return env
}

func (p *parser) states(n *yaml.Node) []State {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "states", "want a list of {name, pattern}, got %s", kindName(n))
		return nil
	}
	var out []State
	for i, e := range n.Content {
		path := fmt.Sprintf("states[%d]", i)
		var s State
		ok := true
		seen := p.fields(e, path, map[string]func(k, v *yaml.Node){
			"name": func(k, v *yaml.Node) {
				var good bool
				s.Name, good = p.nonEmpty(v, join(path, "name"))
				ok = ok && good
			},
			"pattern": func(k, v *yaml.Node) {
				s.Pattern = p.regexp(v, join(path, "pattern"))
				ok = ok && s.Pattern != nil
			},
		})
		if e = resolve(e); e.Kind != yaml.MappingNode {
			continue
		}
		for _, req := range []string{"name", "pattern"} {
			if _, has := seen[req]; !has {
				p.errorf(e, join(path, req), "required")
				ok = false
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) policy(n *yaml.Node) *AutoPolicy {
	pol := &AutoPolicy{}
	p.fields(n, "autoPolicy", map[string]func(k, v *yaml.Node){
		"injectArgs": func(k, v *yaml.Node) { pol.InjectArgs = p.strings(v, "autoPolicy.injectArgs") },
		"handlers":   func(k, v *yaml.Node) { pol.Handlers = p.handlers(v) },
	})
	return pol
}

func (p *parser) handlers(n *yaml.Node) []Handler {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "autoPolicy.handlers", "want a list of {when, send|use}, got %s", kindName(n))
		return nil
	}
	var out []Handler
	for i, e := range n.Content {
		path := fmt.Sprintf("autoPolicy.handlers[%d]", i)
		var h Handler
		ok := true
		seen := p.fields(e, path, map[string]func(k, v *yaml.Node){
			"when": func(k, v *yaml.Node) {
				h.When = p.regexp(v, join(path, "when"))
				ok = ok && h.When != nil
			},
			"send": func(k, v *yaml.Node) {
				var good bool
				h.Send, good = p.nonEmpty(v, join(path, "send"))
				ok = ok && good
			},
			"use": func(k, v *yaml.Node) {
				s, good := p.nonEmpty(v, join(path, "use"))
				if good {
					if _, err := handlers.Lookup(s); err != nil {
						p.errorf(v, join(path, "use"), "%v", err)
						good = false
					}
				}
				h.Use = s
				ok = ok && good
			},
		})
		if e = resolve(e); e.Kind != yaml.MappingNode {
			continue
		}
		if _, has := seen["when"]; !has {
			p.errorf(e, join(path, "when"), "required")
			ok = false
		}
		_, hasSend := seen["send"]
		_, hasUse := seen["use"]
		switch {
		case hasSend && hasUse:
			p.errorf(e, path, "give send or use, not both")
			ok = false
		case !hasSend && !hasUse:
			p.errorf(e, path, "needs send (keys) or use (a handler such as pressEnter or select:1)")
			ok = false
		}
		if ok {
			out = append(out, h)
		}
	}
	return out
}
