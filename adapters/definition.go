package adapters

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/handlers"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
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
//	    output: text         # headless stdout: text | claude-stream-json | codex-json |
//	                         #   gemini-stream-json | opencode-json (parsed as it streams)
//	    resume: [--resume, "{session}"]  # continue the agent's own session (after a denial)
//	    allow: ["--allowedTools={tools}"] # allow the tools a person allowed, when continuing
//	cols: 120                # PTY size
//	rows: 40
//	quietPeriod: 150ms
//	inactivityTimeout: 10m   # default: none
//	answerSettle: 300ms      # answer a question once shown this long (default 0)
//	env: { KEY: value }      # under the task's env
//	mcp: claude              # how the CLI is given a task's MCP servers: claude | codex | gemini | opencode
//	version:                 # how `vibeteam doctor` checks the installed CLI
//	  tested: "1.2.3"        # the version the file was checked against (optional)
//	  args: [--version]      # default; the first line of the output is the version
//	auth:                    # what `vibeteam doctor` looks for (names only)
//	  env: [AIDER_KEY, OPENAI_API_KEY]  # any one set (non-empty) is enough
//	  note: "or a login: aider --login" # shown when none is set
//	states:                  # ordered; first match on the rendered screen wins
//	  - { name: interaction_idle, pattern: '(?m)^> $' }
//	autoPolicy:
//	  injectArgs: [--yes-always]
//	  handlers:              # each: when + exactly one of send, use, choose
//	    - { when: '\(Y\)es/\(N\)o', send: "y\r" }
//	    - { when: 'Continue\?', use: pressEnter }
//	    - { when: 'Trust this folder', choose: "Yes, trust it" }  # a menu option by its label
//
// The argv is, in this order:
//
//	command  args  extraArgs  injectArgs  [allow  resume]  prompt
//
// injectArgs only with --auto-approve (Options.AutoApprove), allow and
// resume only when continuing an agent's session (Options.Continue), and prompt is
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

// DefaultVersionArgs ask a command for its version when an adapter file's
// version key has no args.
var DefaultVersionArgs = []string{"--version"}

// Prompt positions: where LaunchConfig puts the prompt in argv.
const (
	PromptArg  = "arg"  // appended last, as a positional argument
	PromptFlag = "flag" // appended last as `flag prompt`
	PromptNone = "none" // the mode takes no prompt
	// PromptStdin writes the prompt to the CLI's stdin (headless only),
	// then closes it: a prompt of any length reaches the agent.
	PromptStdin = "stdin"
)

// MaxArgPrompt is the longest prompt put in an argument: Linux takes at
// most 128 KiB in one (MAX_ARG_STRLEN), and the rest of argv and the
// environment share the space.
const MaxArgPrompt = 96 << 10

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
	answerSettle      time.Duration
	env               map[string]string
	states            []State
	policy            *AutoPolicy  // nil when the file has no autoPolicy
	version           *versionSpec // nil when the file has no version key
	auth              authSpec
	mcp               string   // how the CLI is given MCP servers (MCPFormats); "" for not at all
	acp               *acpSpec // modes.acp; nil without one
}

// acpSpec is modes.acp: the agent's ACP command and how its sessions run.
type acpSpec struct {
	command string // "" for the adapter's own
	args    []string
	env     map[string]string // over the adapter's env; "{path:NAME}" is NAME's path on PATH
	// sessionMode is set when permissions are asked (no --auto-approve):
	// a mode that asks; autoApproveMode with --auto-approve ("" for
	// sessionMode, the policy then answering each request).
	sessionMode, autoApproveMode string
}

// versionSpec is how to ask the command for its version, for doctor.
type versionSpec struct {
	tested string   // the version the file was checked against; "" for none
	args   []string // never empty: DefaultVersionArgs when not written
}

// authSpec names the environment variables that give the CLI its
// credentials, any one of which is enough, for doctor. Only names: a CLI
// may also keep a login of its own, which note says how to make.
type authSpec struct {
	env  []string
	note string
}

type modeSpec struct {
	args   []string
	prompt promptSpec
	usePTY bool
	output Output // headless stdout: text, or a structured format vibeteam parses
	// resume and allow continue an agent's own session after a denial:
	// {session} is its session id, {tools} the allowed tools.
	resume []string
	allow  []string
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
	// longOnStdin: a prompt longer than MaxArgPrompt goes to stdin instead
	// (the CLI reads its prompt from stdin when none is given).
	longOnStdin bool
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

// Keys of an adapter file at each level, in the order messages list them.
var (
	rootKeys    = []string{"name", "command", "description", "modes", "cols", "rows", "quietPeriod", "inactivityTimeout", "stuckAfter", "answerSettle", "env", "version", "auth", "mcp", "states", "autoPolicy"}
	versionKeys = []string{"tested", "args"}
	authKeys    = []string{"env", "note"}
	modeNames   = []string{string(Interactive), string(Headless), string(ACP)}
	acpKeys     = []string{"command", "args", "env", "sessionMode", "autoApproveMode"}
	modeKeys    = []string{"args", "prompt", "usePTY", "output", "resume", "allow"}
	promptKeys  = []string{"position", "flag", "form", "separator", "allowLeadingDash", "required", "longOnStdin"}
	stateKeys   = []string{"name", "pattern"}
	policyKeys  = []string{"injectArgs", "handlers", "sandboxedArgs", "sandboxedEnv"}
	handlerKeys = []string{"when", "send", "use", "choose"}
)

// deprecatedCloseStdin is a key of a mode that vibeteam no longer reads: the
// engine closes a headless task's stdin once its pendingInputs are written,
// whatever the file says. Files written for earlier versions still have it,
// so it is accepted and ignored rather than refused as an unknown key, and
// silently, since parseDefinition has no way to pass on a warning (every
// problem it returns makes the file broken). It is still checked as before
// (true or false, never with a PTY) so that no file that was refused loads
// now; it is left out of the keys a message lists.
const deprecatedCloseStdin = "closeStdin"

// parseDefinition parses one adapter file. file names the file in errors; its
// base name (without extension) is the adapter name when the file has no
// `name`. Every problem of the file is reported, as an ErrorList.
func parseDefinition(file string, data []byte) (*definition, error) {
	var doc yaml.Node
	if err := yamlnode.SafeUnmarshal(data, &doc); err != nil {
		return nil, ErrorList{yamlnode.SyntaxError(err, file, data)}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, ErrorList{{Pos: yamlnode.Pos{File: file, Line: 1, Col: 1}, Msg: yamlnode.MsgEmptyFile}}
	}
	p := &parser{yamlnode.NewWalker(file, len(data))}
	d := p.definition(doc.Content[0])
	if err := errorOf(p.Errs); err != nil {
		return nil, err
	}
	if d.name == "" {
		d.name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		if !namePattern.MatchString(d.name) {
			return nil, ErrorList{{Pos: yamlnode.Pos{File: file, Line: 1, Col: 1}, Field: "name",
				Msg: fmt.Sprintf("file name %q is not a valid adapter name; add a name key", d.name)}}
		}
	}
	return d, nil
}

// parser walks the node tree of an adapter file with the walker workflow
// files use too (see yamlnode), so a mistake reads the same in both. Merge
// keys ("<<") are not expanded: the format has never taken them.
type parser struct {
	*yamlnode.Walker
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Unlike a workflow, an adapter file has never taken a null (a key with
// nothing after it) for a boolean, a number or a duration: these readers
// refuse it, and otherwise read as the walker's do.

func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	if !p.NotNull(n, field, yamlnode.ABool) {
		return false, false
	}
	return p.Bool(n, field)
}

// size reads a PTY dimension.
func (p *parser) size(n *yaml.Node, field string) (int, bool) {
	if !p.NotNull(n, field, yamlnode.IntWhat(1, 10000)) {
		return 0, false
	}
	return p.Int(n, field, 1, 10000)
}

// durationSpec: an adapter's durations are written with a unit ("150ms",
// "10m"); 0 is allowed (no inactivity timeout, no quiet period).
var durationSpec = yamlnode.DurationSpec{Zero: true}

func (p *parser) duration(n *yaml.Node, field string) (time.Duration, bool) {
	if !p.NotNull(n, field, durationSpec.What()) {
		return 0, false
	}
	return p.Duration(n, field, durationSpec)
}

// nonEmpty reads text that must not be empty.
func (p *parser) nonEmpty(n *yaml.Node, field string) (string, bool) {
	s, ok := p.Text(n, field)
	if ok && s == "" {
		p.Fail(n, field, yamlnode.MsgNotEmpty)
		return "", false
	}
	return s, ok
}

func (p *parser) regexp(n *yaml.Node, field string) *regexp.Regexp {
	s, ok := p.nonEmpty(n, field)
	if !ok {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		p.Fail(n, field, "%v", err)
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
	root = p.Deref(root)
	if root.Kind != yaml.MappingNode && !yamlnode.IsNull(root) {
		p.Errorf(root, "", `the top level must be a mapping with "command" and "modes"`)
		return d
	}
	seen, _ := p.Fields(root, "", "", rootKeys, func(kv yamlnode.Pair) { p.rootField(d, kv) })
	// Only a mapping is told what it lacks. (A file holding a null alone,
	// "~" or "---", has never been refused: it loads as an adapter without
	// a command or modes, which fails when a task uses it.)
	if root.Kind == yaml.MappingNode {
		for _, key := range []string{"command", "modes"} {
			if _, ok := seen[key]; !ok {
				p.Errorf(root, "", "%s", yamlnode.MissingKey(key))
			}
		}
	}
	return d
}

// rootField reads one key of the file's top level into d.
func (p *parser) rootField(d *definition, kv yamlnode.Pair) {
	v := kv.Val
	switch key := kv.Key.Value; key {
	case "name":
		if s, ok := p.nonEmpty(v, key); ok {
			if !namePattern.MatchString(s) {
				p.Fail(v, key, `invalid adapter name %q: use letters, digits, ".", "_" and "-", starting with a letter or a digit`, s)
				return
			}
			d.name = s
		}
	case "command":
		if s, ok := p.nonEmpty(v, key); ok {
			d.command = s
		}
	case "description":
		d.description, _ = p.Text(v, key)
	case "modes":
		p.modes(v, d)
	case "cols":
		if i, ok := p.size(v, key); ok {
			d.cols = i
		}
	case "rows":
		if i, ok := p.size(v, key); ok {
			d.rows = i
		}
	case "quietPeriod":
		if t, ok := p.duration(v, key); ok {
			d.quietPeriod = t
		}
	case "inactivityTimeout":
		d.inactivityTimeout, _ = p.duration(v, key)
	case "answerSettle":
		d.answerSettle, _ = p.duration(v, key)
	case "stuckAfter":
		if t, ok := p.duration(v, key); ok {
			if t == 0 {
				p.Fail(v, key, "must be a positive duration (an answer needs time to show)")
				return
			}
			d.stuckAfter = t
		}
	case "env":
		d.env = p.Env(v, key, p.Text)
	case "states":
		d.states = p.states(v)
	case "autoPolicy":
		d.policy = p.policy(v)
	case "version":
		d.version = p.version(v)
	case "mcp":
		if v, ok := p.Text(kv.Val, "mcp"); ok {
			if !slices.Contains(MCPFormats, v) {
				p.Fail(kv.Val, "mcp", "unknown MCP format %q%s (known: %s)", v, yamlnode.DidYouMean(v, MCPFormats), strings.Join(MCPFormats, ", "))
			} else {
				d.mcp = v
			}
		}
	case "auth":
		d.auth = p.auth(v)
	}
}

func (p *parser) modes(n *yaml.Node, d *definition) {
	p.Fields(n, "modes", "", modeNames, func(kv yamlnode.Pair) {
		m := Mode(kv.Key.Value)
		if m == ACP {
			d.acp = p.acpMode(kv.Val)
			return
		}
		d.modes[m] = p.mode(kv.Val, "modes."+string(m), m)
	})
	if n = p.Deref(n); yamlnode.IsNull(n) || n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		p.Errorf(n, "modes", "an adapter needs at least one mode: interactive, headless or acp")
	}
}

func outputNames() []string {
	names := make([]string, len(Outputs))
	for i, o := range Outputs {
		names[i] = string(o)
	}
	return names
}

func (p *parser) mode(n *yaml.Node, path string, m Mode) modeSpec {
	spec := modeSpec{prompt: promptSpec{position: PromptArg}, usePTY: m == Interactive, output: OutputText}
	var ptyNode, closeNode, outputNode, promptNode *yaml.Node
	pairs, _ := p.Map(n, path, "")
	pairs = slices.DeleteFunc(pairs, func(kv yamlnode.Pair) bool {
		if kv.Key.Value != deprecatedCloseStdin {
			return false
		}
		if b, ok := p.boolean(kv.Val, join(path, deprecatedCloseStdin)); ok && b {
			closeNode = kv.Val
		}
		return true
	})
	p.Visit(pairs, path, modeKeys, func(kv yamlnode.Pair) {
		f := join(path, kv.Key.Value)
		switch kv.Key.Value {
		case "args":
			spec.args = p.Strings(kv.Val, f, p.Text)
		case "prompt":
			spec.prompt, promptNode = p.prompt(kv.Val, f), kv.Val
		case "usePTY":
			if b, ok := p.boolean(kv.Val, f); ok {
				spec.usePTY, ptyNode = b, kv.Val
			}
		case "resume":
			spec.resume = p.Strings(kv.Val, f, p.Text)
			if !slices.ContainsFunc(spec.resume, func(a string) bool { return strings.Contains(a, "{session}") }) {
				p.Fail(kv.Val, f, "needs {session} in one of its args: where the agent's session id goes")
			}
		case "allow":
			spec.allow = p.Strings(kv.Val, f, p.Text)
		case "output":
			if v, ok := p.Text(kv.Val, f); ok {
				if !slices.Contains(Outputs, Output(v)) {
					p.Fail(kv.Val, f, "unknown output format %q%s (known: %s)", v, yamlnode.DidYouMean(v, outputNames()), strings.Join(outputNames(), ", "))
				} else {
					spec.output, outputNode = Output(v), kv.Val
				}
			}
		}
	})
	if outputNode != nil && spec.output != OutputText && (m == Interactive || spec.usePTY) {
		p.Fail(outputNode, join(path, "output"), "a structured output is read from a headless mode's pipe, not from a terminal: only for headless without usePTY")
	}
	if promptNode != nil && (spec.prompt.position == PromptStdin || spec.prompt.longOnStdin) && (m == Interactive || spec.usePTY) {
		p.Fail(promptNode, join(path, "prompt"), "a prompt on stdin is for a headless mode without usePTY: in a terminal, stdin is the person's")
	}
	if m == Interactive && ptyNode != nil && !spec.usePTY {
		p.Fail(ptyNode, join(path, "usePTY"), "interactive mode always runs in a PTY")
	}
	if closeNode != nil && spec.usePTY {
		// Refused before the key was dropped; still refused, so that no
		// file that failed to load loads now.
		p.Fail(closeNode, join(path, deprecatedCloseStdin), "only for a headless mode without usePTY, and no longer used: remove it")
	}
	return spec
}

// acpMode reads modes.acp.
func (p *parser) acpMode(n *yaml.Node) *acpSpec {
	spec := &acpSpec{}
	p.Fields(n, "modes.acp", `a mapping such as { command: claude-agent-acp, args: [] }`, acpKeys, func(kv yamlnode.Pair) {
		f := join("modes.acp", kv.Key.Value)
		switch kv.Key.Value {
		case "command":
			spec.command, _ = p.nonEmpty(kv.Val, f)
		case "args":
			spec.args = p.Strings(kv.Val, f, p.Text)
		case "env":
			spec.env = p.Env(kv.Val, f, p.Text)
			for k, v := range spec.env {
				if strings.HasPrefix(v, "{path:") && (!strings.HasSuffix(v, "}") || len(v) == len("{path:}")) {
					p.Fail(kv.Val, join(f, k), `"{path:NAME}" needs a command name, e.g. "{path:claude}"; got %q`, v)
				}
			}
		case "sessionMode":
			spec.sessionMode, _ = p.nonEmpty(kv.Val, f)
		case "autoApproveMode":
			spec.autoApproveMode, _ = p.nonEmpty(kv.Val, f)
		}
	})
	return spec
}

func (p *parser) prompt(n *yaml.Node, path string) promptSpec {
	var spec promptSpec
	var nodes promptNodes
	p.Fields(n, path, "", promptKeys, func(kv yamlnode.Pair) {
		v, f := kv.Val, join(path, kv.Key.Value)
		switch kv.Key.Value {
		case "position":
			s, ok := p.Text(v, f)
			if !ok {
				return
			}
			switch s {
			case PromptArg, PromptFlag, PromptNone, PromptStdin:
				spec.position, nodes.position = s, v
			default:
				p.Fail(v, f, "%s", yamlnode.OneOf(s, PromptArg, PromptFlag, PromptNone, PromptStdin))
			}
		case "flag":
			if s, ok := p.nonEmpty(v, f); ok {
				spec.flag, nodes.flag = s, v
			}
		case "form":
			s, ok := p.Text(v, f)
			if !ok {
				return
			}
			switch s {
			case PromptFormSeparate, PromptFormEquals:
				spec.form, nodes.form = s, v
			default:
				p.Fail(v, f, "%s", yamlnode.OneOf(s, PromptFormSeparate, PromptFormEquals))
			}
		case "separator":
			s, ok := p.nonEmpty(v, f)
			if !ok {
				return
			}
			// A separator not starting with "-" would itself be a
			// positional argument: most likely a typo for "--".
			if !strings.HasPrefix(s, "-") {
				p.Fail(v, f, "must be an end-of-options marker such as \"--\", got %q", s)
				return
			}
			spec.separator, nodes.separator = s, v
		case "allowLeadingDash":
			if b, ok := p.boolean(v, f); ok {
				spec.allowLeadingDash, nodes.allowLeadingDash = b, v
			}
		case "required":
			if b, ok := p.boolean(v, f); ok {
				spec.required, nodes.required = b, v
			}
		case "longOnStdin":
			if b, ok := p.boolean(v, f); ok {
				spec.longOnStdin, nodes.longOnStdin = b, v
			}
		}
	})
	p.checkPrompt(&spec, path, nodes)
	return spec
}

// promptNodes are where a prompt's keys were written, for the errors of
// the keys that have no effect together.
type promptNodes struct {
	position, flag, form, separator, allowLeadingDash, required, longOnStdin *yaml.Node
}

// checkPrompt gives spec its defaults, and refuses the keys that would
// have no effect with its position.
func (p *parser) checkPrompt(spec *promptSpec, path string, nodes promptNodes) {
	switch {
	case spec.position == "" && spec.flag != "":
		// A flag alone says where the prompt goes; demanding
		// `position: flag` too would only be noise.
		spec.position = PromptFlag
	case spec.position == "":
		spec.position = PromptArg
	case spec.position == PromptFlag && spec.flag == "":
		p.Errorf(nodes.position, path, "%s (position is flag)", yamlnode.MissingKey("flag"))
	}
	if spec.position == PromptFlag && spec.form == "" {
		spec.form = PromptFormSeparate
	}
	// Keys that would have no effect are errors: a user who wrote them
	// expects an effect.
	onlyWith := func(key *yaml.Node, name, want string) {
		if key != nil && spec.position != want {
			p.Errorf(key, join(path, name), "only used with position: %s (position is %s)", want, spec.position)
		}
	}
	onlyWith(nodes.flag, "flag", PromptFlag)
	onlyWith(nodes.form, "form", PromptFlag)
	onlyWith(nodes.separator, "separator", PromptArg)
	if nodes.allowLeadingDash != nil && spec.position != PromptNone && spec.optionSafe() {
		p.Errorf(nodes.allowLeadingDash, join(path, "allowLeadingDash"), "has no effect: with a separator or form: equals no prompt can be read as an option")
	} else if nodes.allowLeadingDash != nil && spec.position == PromptNone {
		p.Errorf(nodes.allowLeadingDash, join(path, "allowLeadingDash"), "has no effect: position is none")
	}
	if nodes.required != nil && spec.required && spec.position == PromptNone {
		p.Errorf(nodes.required, join(path, "required"), "contradicts position: none, which takes no prompt")
	}
	if nodes.longOnStdin != nil && spec.longOnStdin && (spec.position == PromptNone || spec.position == PromptStdin) {
		p.Errorf(nodes.longOnStdin, join(path, "longOnStdin"), "has no effect: position is %s", spec.position)
	}
}

func (p *parser) states(n *yaml.Node) []State {
	return yamlnode.List(p.Walker, n, "states", "a list of states", func(_ int, e *yaml.Node, path string) (State, bool) {
		var s State
		ok := true
		seen, _ := p.Fields(e, path, `a mapping with "name" and "pattern"`, stateKeys, func(kv yamlnode.Pair) {
			f := join(path, kv.Key.Value)
			switch kv.Key.Value {
			case "name":
				var good bool
				s.Name, good = p.nonEmpty(kv.Val, f)
				ok = ok && good
			case "pattern":
				s.Pattern = p.regexp(kv.Val, f)
				ok = ok && s.Pattern != nil
			}
		})
		if e = p.Deref(e); e.Kind != yaml.MappingNode {
			return s, false // reported by Fields, or a null, which is skipped
		}
		for _, req := range stateKeys {
			if _, has := seen[req]; !has {
				p.Errorf(e, path, "%s", yamlnode.MissingKey(req))
				ok = false
			}
		}
		return s, ok
	})
}

// version reads the version key. A null is the defaults: the command is
// asked with DefaultVersionArgs, and no version is known to be tested.
func (p *parser) version(n *yaml.Node) *versionSpec {
	v := &versionSpec{}
	p.Fields(n, "version", "a mapping such as { tested: \"1.2.3\", args: [--version] }", versionKeys, func(kv yamlnode.Pair) {
		f := join("version", kv.Key.Value)
		switch kv.Key.Value {
		case "tested":
			v.tested, _ = p.nonEmpty(kv.Val, f)
		case "args":
			args := p.Strings(kv.Val, f, p.Text)
			// An empty list would start the CLI itself, which may
			// wait for input in its TUI until doctor's timeout.
			if n := p.Deref(kv.Val); n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
				p.Fail(kv.Val, f, "must not be empty: the arguments that make the command print its version (default [--version])")
				return
			}
			v.args = args
		}
	})
	if len(v.args) == 0 {
		v.args = slices.Clone(DefaultVersionArgs)
	}
	return v
}

// auth reads the auth key: environment variable names, and a note.
func (p *parser) auth(n *yaml.Node) authSpec {
	var a authSpec
	p.Fields(n, "auth", "a mapping such as { env: [API_KEY], note: \"or a login\" }", authKeys, func(kv yamlnode.Pair) {
		f := join("auth", kv.Key.Value)
		switch kv.Key.Value {
		case "env":
			elems, _ := p.Seq(kv.Val, f, aListOfEnvNames)
			for i, el := range elems {
				if p.Exhausted {
					break
				}
				ef := fmt.Sprintf("%s[%d]", f, i)
				name, ok := p.nonEmpty(el, ef)
				switch {
				case !ok:
				case strings.ContainsAny(name, "=\x00"):
					p.Fail(el, ef, "invalid environment variable name %q", name)
				case slices.Contains(a.env, name):
					p.Fail(el, ef, "%s is listed twice", name)
				default:
					a.env = append(a.env, name)
				}
			}
		case "note":
			a.note, _ = p.Text(kv.Val, f)
		}
	})
	return a
}

// aListOfEnvNames is what auth.env must be.
const aListOfEnvNames = "a list of environment variable names"

func (p *parser) policy(n *yaml.Node) *AutoPolicy {
	pol := &AutoPolicy{}
	p.Fields(n, "autoPolicy", "", policyKeys, func(kv yamlnode.Pair) {
		switch kv.Key.Value {
		case "injectArgs":
			pol.InjectArgs = p.Strings(kv.Val, "autoPolicy.injectArgs", p.Text)
		case "sandboxedArgs":
			pol.SandboxedArgs = p.Strings(kv.Val, "autoPolicy.sandboxedArgs", p.Text)
		case "sandboxedEnv":
			pol.SandboxedEnv = p.Env(kv.Val, "autoPolicy.sandboxedEnv", p.String)
		case "handlers":
			pol.Handlers = p.handlers(kv.Val)
		}
	})
	return pol
}

func (p *parser) handlers(n *yaml.Node) []Handler {
	return yamlnode.List(p.Walker, n, "autoPolicy.handlers", "a list of handlers", func(_ int, e *yaml.Node, path string) (Handler, bool) {
		var h Handler
		ok := true
		seen, _ := p.Fields(e, path, `a mapping with "when" and "send", "use" or "choose"`, handlerKeys, func(kv yamlnode.Pair) {
			v, f := kv.Val, join(path, kv.Key.Value)
			switch kv.Key.Value {
			case "when":
				h.When = p.regexp(v, f)
				ok = ok && h.When != nil
			case "send":
				var good bool
				h.Send, good = p.nonEmpty(v, f)
				ok = ok && good
			case "use":
				s, good := p.nonEmpty(v, f)
				if good {
					if _, err := handlers.Lookup(s); err != nil {
						p.Fail(v, f, "%v", err)
						good = false
					}
				}
				h.Use = s
				ok = ok && good
			case "choose":
				s, good := p.nonEmpty(v, f)
				if good {
					if err := handlers.ValidLabel(s); err != nil {
						p.Fail(v, f, "%v", err)
						good = false
					}
				}
				h.Choose = s
				ok = ok && good
			}
		})
		if e = p.Deref(e); e.Kind != yaml.MappingNode {
			return h, false
		}
		if _, has := seen["when"]; !has {
			p.Errorf(e, path, "%s", yamlnode.MissingKey("when"))
			ok = false
		}
		given := 0
		for _, k := range []string{"send", "use", "choose"} {
			if _, has := seen[k]; has {
				given++
			}
		}
		switch {
		case given > 1:
			p.Errorf(e, path, "give one of send, use and choose, not more")
			ok = false
		case given == 0:
			p.Errorf(e, path, "needs send (keys), use (a handler such as pressEnter or select:1) or choose (a menu option's label)")
			ok = false
		}
		return h, ok
	})
}
