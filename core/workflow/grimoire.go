package workflow

// Grimoires (the coven format): the walk of their node tree and their
// semantic checks. Stage workflows are in load.go and validate.go; both
// kinds share the parser's readers (yamlnode's, which adapter files use too)
// and the checker's wording.

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template/parse"
	"unicode"

	"github.com/vibeteam/vibeteam/core/sandbox"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/internal/suggest"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// Keys of a grimoire, exactly as the spec spells them (snake_case; the
// agent's adapter keys keep the camelCase of stage tasks, since they are the
// same thing).
var (
	grimoireKeys   = []string{"name", "description", "timeout", "steps", "mcp", "secrets", "budget", "sandbox"}
	commonStepKeys = []string{"name", "type", "when", "timeout", "output", "sandbox"}
	stepTypeKeys   = map[StepType][]string{
		StepAgent:  {"spell", "input", "adapter", "executionMode", "extraArgs", "on_fail", "mcp", "budget"},
		StepScript: {"command", "on_fail", "on_success"},
		StepLoop:   {"steps", "max_iterations", "on_max_iterations"},
		StepMerge:  {"require_review", "allow_empty", "gate", "gate_timeout", "on_conflict"},
		StepStage:  {"tasks"},
	}
)

// kindHints explain keys that belong to the other kind of file, which an
// edit distance cannot.
var kindHints = map[string]string{
	"id":     `a grimoire and its steps are named by "name"`,
	"goal":   `a grimoire has no goal; its "description" says what it does`,
	"stages": `a file has either "steps" (a grimoire) or "stages" (a stage workflow), not both`,
}

// kindOf tells the kind of a file from its top-level keys: "steps" makes a
// grimoire and "stages" a stage workflow. With neither, a "name" or a
// "description" and no "id" is taken for a grimoire that lacks its steps, so
// that it is told about "steps", not "stages".
func kindOf(pairs []yamlnode.Pair) string {
	has := make(map[string]bool, len(pairs))
	for _, kv := range pairs {
		has[kv.Key.Value] = true
	}
	switch {
	case has["steps"]:
		return KindGrimoire
	case has["stages"]:
		return KindStages
	case (has["name"] || has["description"]) && !has["id"] && !has["goal"]:
		return KindGrimoire
	}
	return KindStages
}

func (p *parser) grimoire(pairs []yamlnode.Pair) *Definition {
	def := &Definition{Kind: KindGrimoire, Source: p.File}
	for _, kv := range pairs {
		if p.Exhausted {
			break
		}
		switch kv.Key.Value {
		case "name":
			def.ID = p.text(kv.Val, "name")
		case "description":
			def.Description = p.text(kv.Val, "description")
		case "timeout":
			def.Timeout = p.duration(kv.Val, "timeout")
		case "steps":
			def.Steps = p.steps(kv.Val, "steps")
		case "mcp":
			def.MCP = p.mcp(kv.Val, "mcp")
		case "secrets":
			def.Secrets = p.secrets(kv.Val)
		case "budget":
			def.Budget = p.budget(kv.Val, "budget")
		case "sandbox":
			def.Sandbox = sandbox.Parse(p.Walker, kv.Val, "sandbox")
		default:
			p.unknownGrimoireKey(kv.Key, "", grimoireKeys)
		}
	}
	return def
}

// steps reads a list of grimoire steps. An element that is not a mapping
// keeps its place as an empty step marked broken, so that the fields of the
// steps after it keep the index the file gives them.
func (p *parser) steps(n *yaml.Node, field string) []Step {
	return yamlnode.List(p.Walker, n, field, "a list of steps", func(_ int, el *yaml.Node, sf string) (Step, bool) {
		el, ok := p.Mapping(el, sf, `a mapping with "name" and "type"`)
		if !ok {
			return Step{Pos: p.At(el)}, true
		}
		return p.step(el, sf), true
	})
}

// step reads one step, n being a mapping.
func (p *parser) step(n *yaml.Node, field string) Step {
	p.Pos[field] = p.At(n)
	s := Step{Pos: p.At(n), Positions: map[string]Pos{}}
	pairs := p.Pairs(n, field, true)
	// The type first: which other keys the step may have depends on it.
	for _, kv := range pairs {
		if kv.Key.Value == "type" {
			s.Type = StepType(p.text(kv.Val, field+".type"))
		}
	}
	allowed, typed := stepTypeKeys[s.Type]
	switch s.Type {
	case StepAgent:
		s.Agent = &AgentStep{}
	case StepScript:
		s.Script = &ScriptStep{}
	case StepLoop:
		s.Loop = &LoopStep{}
	case StepMerge:
		s.Merge = &MergeStep{RequireReview: true}
	}
	for _, kv := range pairs {
		if p.Exhausted {
			break
		}
		key := kv.Key.Value
		f := field + "." + key
		switch {
		case key == "type":
		case slices.Contains(commonStepKeys, key):
			switch key {
			case "name":
				s.Name = p.text(kv.Val, f)
			case "when":
				s.When = p.text(kv.Val, f)
			case "timeout":
				s.Timeout = p.duration(kv.Val, f)
			case "output":
				s.Output = p.text(kv.Val, f)
			case "sandbox":
				s.Sandbox = sandbox.Parse(p.Walker, kv.Val, f)
			}
		case typed && slices.Contains(allowed, key):
			p.typedKey(&s, key, kv.Val, f)
		case !typed && len(ownersOf(key)) > 0:
			// The type is missing or wrong, which the checks report; whether
			// this key fits cannot be told until it is fixed.
		default:
			p.unknownStepKey(kv.Key, field, s.Type, typed)
		}
		if pos, ok := p.Pos[f]; ok {
			s.Positions[key] = pos
		}
	}
	return s
}

// typedKey reads a key that belongs to the step's type.
func (p *parser) typedKey(s *Step, key string, val *yaml.Node, f string) {
	switch string(s.Type) + "." + key {
	case "agent.spell":
		s.Agent.Spell = p.text(val, f)
	case "agent.input":
		s.Agent.Input = p.inputs(val, f, s)
	case "agent.adapter":
		s.Agent.Adapter = p.text(val, f)
	case "agent.executionMode":
		s.Agent.ExecutionMode = p.text(val, f)
	case "agent.extraArgs":
		s.Agent.ExtraArgs = p.Strings(val, f, p.String)
	case "agent.on_fail":
		s.Agent.OnFail = p.text(val, f)
	case "agent.mcp":
		s.Agent.MCP = p.mcp(val, f)
	case "agent.budget":
		s.Agent.Budget = p.budget(val, f)
	case "script.command":
		s.Script.Command = p.text(val, f)
	case "script.on_fail":
		s.Script.OnFail = p.text(val, f)
	case "script.on_success":
		s.Script.OnSuccess = p.text(val, f)
	case "loop.steps":
		if p.loops >= MaxLoopDepth {
			// Deeper is refused before it is read: the cost of a file
			// stays linear in its size.
			p.Fail(val, f, "loops are nested more than %d deep; flatten them (a loop's steps can be a longer list)", MaxLoopDepth)
			return
		}
		p.loops++
		s.Loop.Steps = p.steps(val, f)
		p.loops--
	case "loop.max_iterations":
		s.Loop.MaxIterations, _ = p.Int(val, f, 1, math.MaxInt)
	case "loop.on_max_iterations":
		s.Loop.OnMaxIterations = p.text(val, f)
	case "merge.require_review":
		// null keeps the default, true, which Bool would turn to false.
		if v := p.Deref(val); !yamlnode.IsNull(v) {
			s.Merge.RequireReview, _ = p.Bool(v, f)
		} else {
			p.Pos[f] = p.At(v)
		}
	case "merge.allow_empty":
		s.Merge.AllowEmpty, _ = p.Bool(val, f)
	case "merge.gate":
		// A command, or true (the project's default gate) or false (none,
		// whatever the default).
		v := p.Deref(val)
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
			if b, ok := p.Bool(v, f); ok {
				s.Merge.GateDefault, s.Merge.NoGate = b, !b
			}
			return
		}
		if cmd, ok := p.String(v, f); ok {
			if strings.TrimSpace(cmd) == "" {
				p.Fail(v, f, "must be a command, true (the default gate of %s) or false (none)", configFile)
				return
			}
			s.Merge.Gate = cmd
		}
	case "merge.gate_timeout":
		s.Merge.GateTimeout = p.duration(val, f)
	case "merge.on_conflict":
		s.Merge.OnConflict = p.onConflict(val, f)
	case "stage.tasks":
		s.Tasks = p.tasks(val, f)
	}
}

// inputs reads an agent step's input: a mapping of variable names to
// templates, kept in file order. A name that templates cannot read is
// reported here, at the key.
func (p *parser) inputs(n *yaml.Node, field string, s *Step) []Input {
	pairs, _ := p.Map(n, field, "a map of names to templates")
	if pairs == nil {
		return nil
	}
	out := make([]Input, 0, len(pairs))
	for _, kv := range pairs {
		if p.Exhausted {
			break
		}
		name := kv.Key.Value
		f := field + "." + name
		if msg := inputNameProblem(name); msg != "" {
			p.Fail(kv.Key, f, "%s", msg)
			continue
		}
		v := p.text(kv.Val, f)
		if p.Broken[f] {
			continue
		}
		out = append(out, Input{Name: name, Value: v, Pos: p.Pos[f]})
		s.Positions["input."+name] = p.Pos[f]
	}
	return out
}

// ownersOf lists the step types a key belongs to.
func ownersOf(key string) []StepType {
	var out []StepType
	for _, t := range StepTypes {
		if slices.Contains(stepTypeKeys[t], key) {
			out = append(out, t)
		}
	}
	return out
}

// unknownStepKey rejects a key a step of its type does not have: one of
// another type says whose it is; any other gets the nearest key of this type.
func (p *parser) unknownStepKey(k *yaml.Node, field string, typ StepType, typed bool) {
	known := slices.Concat(commonStepKeys, stepTypeKeys[typ])
	if !typed {
		known = slices.Clone(commonStepKeys)
		for _, t := range StepTypes {
			known = append(known, stepTypeKeys[t]...)
		}
	}
	if owners := ownersOf(k.Value); typed && len(owners) > 0 {
		art := "a"
		if typ == StepAgent {
			art = "an"
		}
		p.Errorf(k, field, "unknown key %q for %s %s step (it is a key of %s steps)", k.Value, art, typ, strings.Join(vocab.Strings(owners), " and "))
		return
	}
	p.unknownGrimoireKey(k, field, known)
}

// unknownGrimoireKey is UnknownKey with a word about keys of the other kind
// of file.
func (p *parser) unknownGrimoireKey(k *yaml.Node, field string, known []string) {
	if hint, ok := kindHints[k.Value]; ok && suggest.Closest(k.Value, known) == "" {
		p.UnknownKeyBecause(k, field, hint)
		return
	}
	p.UnknownKey(k, field, known)
}

// checkGrimoire runs the semantic checks of a grimoire.
func (c *checker) checkGrimoire(def *Definition, root Pos) {
	c.grimoire = true
	switch {
	case c.broken["name"]:
	case strings.TrimSpace(def.ID) == "":
		c.missing("", "name", root)
	default:
		if p := idProblem(def.ID); p != "" {
			c.add(c.at("name", root), "name", fmt.Sprintf("invalid grimoire name %q: %s", def.ID, p))
		}
	}
	if def.Timeout < 0 && !c.broken["timeout"] {
		c.add(c.at("timeout", root), "timeout", "must be a positive duration")
	}
	if len(def.Steps) == 0 && !c.broken["steps"] {
		if c.notWritten("steps") {
			c.missing("", "steps", root)
		} else {
			c.add(c.at("steps", root), "steps", "a grimoire needs at least one step")
		}
	}
	// Every name first, so that an output is checked against the names of
	// the steps after it too.
	c.stepNames = map[string]firstDef{}
	c.names(def.Steps, "steps", root)
	c.gsteps(def.Steps, "steps", root, false)
}

// names checks the steps' names, nested ones included: present, usable in
// templates, not reserved, unique in the file.
func (c *checker) names(steps []Step, field string, root Pos) {
	for i := range steps {
		s := &steps[i]
		sf := field + "[" + strconv.Itoa(i) + "]"
		if c.broken[sf] {
			continue
		}
		spos := c.at(sf, orRoot(s.Pos, root))
		nf := sf + ".name"
		switch {
		case c.broken[nf]:
		case s.Name == "":
			c.missing(sf, "name", spos)
		default:
			if msg := stepNameProblem(s.Name); msg != "" {
				c.add(c.at(nf, spos), nf, msg)
			} else {
				c.unique(c.stepNames, "step name", s.Name, nf, spos)
			}
		}
		if s.Loop != nil {
			c.names(s.Loop.Steps, sf+".steps", root)
		}
	}
}

func (c *checker) gsteps(steps []Step, field string, root Pos, inLoop bool) {
	for i := range steps {
		sf := field + "[" + strconv.Itoa(i) + "]"
		if c.broken[sf] {
			continue
		}
		c.gstep(&steps[i], sf, c.at(sf, orRoot(steps[i].Pos, root)), root, inLoop)
	}
}

func (c *checker) gstep(s *Step, sf string, spos, root Pos, inLoop bool) {
	tf := sf + ".type"
	typed := false
	switch {
	case c.broken[tf]:
	case s.Type == "":
		c.missing(sf, "type", spos)
	case !slices.Contains(StepTypes, s.Type):
		c.add(c.at(tf, spos), tf, fmt.Sprintf("unknown step type %q%s", s.Type, yamlnode.Hint(string(s.Type), vocab.Strings(StepTypes))))
	default:
		typed = true
	}

	if wf := sf + ".when"; s.When != "" && !c.broken[wf] {
		if !strings.Contains(s.When, "{{") && s.When != "true" && s.When != "false" {
			c.add(c.at(wf, spos), wf, fmt.Sprintf(`must be a template that gives true or false, such as "{{.previous.failed}}"; %q is neither`, s.When))
		} else {
			c.template(wf, s.When, spos)
		}
	}
	if s.Timeout < 0 && !c.broken[sf+".timeout"] {
		c.add(c.at(sf+".timeout", spos), sf+".timeout", "must be a positive duration")
	}
	if of := sf + ".output"; s.Output != "" && !c.broken[of] {
		if msg := outputProblem(s.Output); msg != "" {
			c.add(c.at(of, spos), of, msg)
		} else if first, ok := c.stepNames[s.Output]; ok && s.Output != s.Name {
			// Its own name is harmless: both read the same result.
			where := first.field
			if first.pos.Line > 0 {
				where = "line " + strconv.Itoa(first.pos.Line)
			}
			c.add(c.at(of, spos), of, fmt.Sprintf("output %q is also the name of a step (%s): {{.%s}} must mean one thing", s.Output, where, s.Output))
		}
	}
	if !typed {
		return
	}

	switch s.Type {
	case StepAgent:
		a := s.Agent
		if a == nil {
			a = &AgentStep{}
		}
		c.agent(a, sf, spos)
	case StepScript:
		c.scriptStep(s, sf, spos, inLoop)
	case StepLoop:
		c.loopStep(s, sf, spos, root)
	case StepMerge:
		// That it needs a bead (a worktree to merge) is for run to say.
		if m := s.Merge; m != nil && m.GateDefault && c.opts.DefaultGate != nil && *c.opts.DefaultGate == "" {
			gf := sf + ".gate"
			c.add(c.at(gf, spos), gf, fmt.Sprintf("gate: true runs the project's default gate, and %s sets none (merge: {gate: COMMAND}); write the command here, or set it there", configFile))
		}
		if m := s.Merge; m != nil && m.OnConflict != nil {
			c.onConflict(m.OnConflict, sf+".on_conflict", spos)
		}
	case StepStage:
		kf := sf + ".tasks"
		switch {
		case len(s.Tasks) > 0 || c.broken[kf]:
		case c.notWritten(kf):
			c.missing(sf, "tasks", spos)
		default:
			c.add(c.at(kf, spos), kf, fmt.Sprintf("stage %q needs at least one task", s.Name))
		}
		for j, t := range s.Tasks {
			c.task(kf+"["+strconv.Itoa(j)+"]", t, orRoot(t.Pos, spos), c.taskIDs)
		}
	}
}

// scriptStep checks a script step: its command, on_fail and on_success.
func (c *checker) scriptStep(s *Step, sf string, spos Pos, inLoop bool) {
	sc := s.Script
	if sc == nil {
		sc = &ScriptStep{}
	}
	cf := sf + ".command"
	switch {
	case c.broken[cf]:
	case strings.TrimSpace(sc.Command) == "":
		c.missing(sf, "command", spos)
	default:
		c.scriptCommand(s.Name, cf, sc.Command, c.at(cf, spos))
	}
	c.oneOf(sf+".on_fail", sc.OnFail, spos, OnFailContinue, OnFailBlock)
	osf := sf + ".on_success"
	c.oneOf(osf, sc.OnSuccess, spos, OnSuccessExitLoop)
	if sc.OnSuccess == OnSuccessExitLoop && !inLoop && !c.broken[osf] {
		c.add(c.at(osf, spos), osf, "exit_loop leaves the enclosing loop, and this step is not in a loop")
	}
}

// loopStep checks a loop step: its steps (at least one), max_iterations
// and on_max_iterations.
func (c *checker) loopStep(s *Step, sf string, spos, root Pos) {
	l := s.Loop
	if l == nil {
		l = &LoopStep{}
	}
	lf := sf + ".steps"
	if len(l.Steps) == 0 && !c.broken[lf] {
		if c.notWritten(lf) {
			c.missing(sf, "steps", spos)
		} else {
			c.add(c.at(lf, spos), lf, fmt.Sprintf("loop %q needs at least one step", s.Name))
		}
	}
	if mf := sf + ".max_iterations"; l.MaxIterations < 0 && !c.broken[mf] {
		c.add(c.at(mf, spos), mf, "must be at least 1")
	}
	c.oneOf(sf+".on_max_iterations", l.OnMaxIterations, spos, OnMaxBlock, OnMaxExit, OnMaxContinue)
	c.gsteps(l.Steps, lf, root, true)
}

// agent checks an agent step: its spell, its input, and the adapter and mode
// it runs in (the defaults when not written).
func (c *checker) agent(a *AgentStep, sf string, spos Pos) {
	spf := sf + ".spell"
	switch {
	case c.broken[spf]:
	case strings.TrimSpace(a.Spell) == "":
		c.missing(sf, "spell", spos)
	case !a.InlineSpell() && spellNameProblem(a.Spell) != "":
		c.add(c.at(spf, spos), spf, spellNameProblem(a.Spell))
	case c.opts.BaseDir != "":
		// As the run will find it: the file exists, it, its partials and
		// the system prompt parse.
		if c.spells == nil {
			c.spells = render.NewSpells(c.opts.BaseDir)
		}
		if err := c.spells.Check(a.Spell); err != nil {
			msg := err.Error()
			// A broken system prompt is one problem, not one per step.
			if !strings.HasPrefix(msg, "system prompt") || !c.once[msg] {
				c.once[msg] = true
				c.add(c.at(spf, spos), spf, msg)
			}
		}
	case a.InlineSpell():
		// Without the project, the syntax only. {{include "x.md" k="v"}} is
		// not Go template syntax until core/render rewrites it, so a spell
		// that includes is left to the check above.
		if !strings.Contains(a.Spell, "include") {
			c.template(spf, a.Spell, spos)
		}
	}
	for _, in := range a.Input {
		f := sf + ".input." + in.Name
		if c.broken[f] {
			continue
		}
		if msg := inputNameProblem(in.Name); msg != "" {
			c.add(c.at(f, spos), f, msg)
			continue
		}
		c.template(f, in.Value, spos)
	}
	c.oneOf(sf+".on_fail", a.OnFail, spos, OnFailContinue, OnFailBlock)

	af, mf := sf+".adapter", sf+".executionMode"
	adapter := a.Adapter
	if adapter == "" {
		adapter = DefaultAgentAdapter
	}
	known := false
	switch {
	case c.broken[af]:
	case strings.TrimSpace(adapter) == "":
		c.add(c.at(af, spos), af, "must not be blank (leave it out for "+DefaultAgentAdapter+")")
	default:
		known = c.adapterKnown(af, adapter, c.at(af, spos))
	}
	validMode := c.broken[mf] || c.modeValid(mf, a.ExecutionMode, spos)
	effective := a.ExecutionMode
	if effective == "" {
		effective = DefaultAgentMode
	}
	if c.opts.ForceHeadless {
		effective = ModeHeadless
	}
	if ms, ok := c.opts.Adapters.(ModeSet); ok && known && (validMode || c.opts.ForceHeadless) && !ms.HasMode(adapter, effective) {
		msg := fmt.Sprintf("adapter %q has no %s mode", adapter, effective)
		if c.opts.ForceHeadless && a.ExecutionMode != ModeHeadless {
			msg += " (--headless runs every agent headless)"
		}
		c.add(c.at(mf, spos), af, msg)
	}
	if known {
		c.mcpTaken(sf, adapter, effective, a.MCP, spos)
	}
	if known && c.opts.BaseDir != "" {
		c.installed(af, adapter, effective, c.opts.BaseDir, c.at(af, spos))
	}
}

// scriptCommand checks the template of a script command as core/render will
// render it: a value that cannot be quoted where it lands in the shell text
// is an error, one per value; raw is a warning.
func (c *checker) scriptCommand(step, cf, text string, at Pos) {
	warnings, err := render.CommandWarnings(step, text)
	// render says where: "step "x": command: line 2: unclosed action".
	strip := func(msg string) string {
		msg = strings.TrimPrefix(msg, fmt.Sprintf("step %q: command: ", step))
		if strings.HasPrefix(msg, "line ") {
			return "template " + msg
		}
		return "template: " + msg
	}
	if err != nil {
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, e := range errs {
			c.add(at, cf, strip(e.Error()))
		}
		return
	}
	if c.pos == nil {
		// Validate, on a stored definition (resume): its author has had
		// the warnings; only what stops the run counts now.
		return
	}
	for _, w := range warnings {
		c.errs = append(c.errs, &Error{Pos: at, Field: cf, Msg: strings.TrimPrefix(w, fmt.Sprintf("step %q: command: ", step)), Warning: true})
	}
}

// oneOf reports a value that is none of allowed; empty means the default.
func (c *checker) oneOf(field, got string, at Pos, allowed ...string) {
	if got == "" || slices.Contains(allowed, got) || c.broken[field] {
		return
	}
	c.add(c.at(field, at), field, yamlnode.OneOf(got, allowed...))
}

// template reports a template that does not parse. Functions are not
// looked up: which ones there are is core/render's business, and it reports
// an unknown one when it renders.
func (c *checker) template(field, text string, at Pos) {
	if c.broken[field] {
		return
	}
	if msg := templateProblem(text); msg != "" {
		c.add(c.at(field, at), field, msg)
	}
}

func templateProblem(text string) string {
	if !strings.Contains(text, "{{") {
		return ""
	}
	t := parse.New("t")
	t.Mode = parse.SkipFuncCheck
	if _, err := t.Parse(text, "", "", map[string]*parse.Tree{}); err != nil {
		// "template: t:1: unclosed action" → "template line 1: unclosed action"
		return "template line " + strings.TrimPrefix(err.Error(), "template: t:")
	}
	return ""
}

// A step name is what {{step "run-tests"}} takes; without a hyphen,
// {{.run_tests}} reads it too. An output or input name is read only as
// {{.name}}, where a hyphen would be a minus.
var (
	stepNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	varNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ReservedNames are the names of a template's scope that vibeteam defines
// (render.ReservedNames, which renders them). A step, an output alias or an
// input named like one would hide it or be hidden by it, so such a name is
// refused.
var ReservedNames = render.ReservedNames

// reservedWhy says what each reserved name is in a template.
var reservedWhy = map[string]string{
	"goal":       "{{.goal}} is the goal of the run",
	"bead":       "{{.bead}} is the bead being worked on",
	"previous":   "{{.previous}} is the step that ran just before",
	"loop_entry": "{{.loop_entry}} is the step that ran before the loop",
	// The system prompt puts the rendered spell there.
	"spell_content": "{{.spell_content}} is the spell in the system prompt",
}

func reservedProblem(what, name, instead string) string {
	if !slices.Contains(ReservedNames, name) {
		return ""
	}
	why, ok := reservedWhy[name]
	if !ok {
		why = fmt.Sprintf("{{.%s}} is a variable of every template", name)
	}
	return fmt.Sprintf("%s %q is reserved: %s; use another, such as %q", what, name, why, instead)
}

func stepNameProblem(name string) string {
	return nameProblem("step", name, stepNameRE, true, `letters, digits, "_" and "-", starting with a letter or "_"`)
}

func outputProblem(name string) string {
	return nameProblem("output", name, varNameRE, false, `letters, digits and "_", starting with a letter or "_", so that {{.NAME}} can read it`)
}

func inputNameProblem(name string) string {
	return nameProblem("input", name, varNameRE, false, `letters, digits and "_", starting with a letter or "_", so that the spell can read it as {{.NAME}}`)
}

// nameProblem is what is wrong with name, the name of a step, an output
// or an input (kind): not matching re (use says what to use instead, and a
// sanitized name is suggested, with hyphens when they are allowed), or
// reserved; "" when it is fine.
func nameProblem(kind, name string, re *regexp.Regexp, hyphen bool, use string) string {
	if !re.MatchString(name) {
		msg := fmt.Sprintf("invalid %s name %q: use %s", kind, name, use)
		if s := sanitizeName(name, hyphen); s != "" {
			msg += fmt.Sprintf(" (such as %q)", s)
		}
		return msg
	}
	return reservedProblem(kind+" name", name, name+"_"+kind)
}

// sanitizeName turns a name that is not allowed into one that is, for a
// suggestion: each run of other characters becomes "_". "" when nothing of
// the name is left.
func sanitizeName(name string, hyphen bool) string {
	var b strings.Builder
	under := false
	for _, r := range name {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || hyphen && r == '-')
		switch {
		case ok:
			b.WriteRune(r)
			under = r == '_'
		case !under && b.Len() > 0:
			b.WriteByte('_')
			under = true
		}
	}
	s := strings.TrimRight(b.String(), "_-")
	if s == "" {
		return ""
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '-' {
		s = "_" + s
	}
	return s
}

// spellNameProblem says why a one-line spell cannot be the name of a spell
// file, or "". A one-line spell is always a name (the spec), so a sentence
// written on one line would only fail when the step runs.
func spellNameProblem(name string) string {
	switch {
	case strings.ContainsAny(name, " \t") || strings.Contains(name, "{{"):
		return fmt.Sprintf(`%q is one line, so it names a spell file (.vibeteam/spells/NAME.md), which it cannot; write an inline spell as a block, "spell: |" and its text on the lines below`, name)
	case strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || slices.Contains(strings.Split(name, "/"), ".."):
		return fmt.Sprintf(`invalid spell name %q: must be a name under .vibeteam/spells, without ".." or a leading "/"`, name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Sprintf("invalid spell name %q: must not contain control characters", name)
	}
	return ""
}
