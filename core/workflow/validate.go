package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// Validate runs the semantic checks (stages and tasks present, ids unique,
// adapters registered, execution modes, prompts of headless tasks) on a
// definition that is already built, for example one reloaded from a session
// file when the adapters or --headless may have changed since it was stored.
// Positions come from the definition and may be zero. Validate does not
// modify def; see Normalize.
func Validate(def *Definition, opts LoadOptions) ErrorList {
	if def == nil {
		return ErrorList{{Msg: "no workflow definition"}}
	}
	errs := check(def, opts, nil, nil, Pos{File: def.Source})
	errs.Sort()
	return errs
}

// Normalize gives every task an explicit execution mode (interactive when
// none was written) and applies --headless, and fills in the defaults of a
// grimoire and its steps (timeouts, adapter and mode of agent steps, on_fail,
// max_iterations, on_max_iterations), so that the engine and the stored
// session never have to know the defaults. A loop's or a stage step's
// sandbox: block is pushed into the steps and tasks inside it (theirs over
// it). It is idempotent.
func Normalize(def *Definition, opts LoadOptions) {
	if def == nil {
		return
	}
	if def.Kind == KindGrimoire && def.Timeout == 0 {
		def.Timeout = DefaultGrimoireTimeout
	}
	normalizeSteps(def.Steps, opts)
}

func normalizeSteps(steps []Step, opts LoadOptions) {
	for i := range steps {
		s := &steps[i]
		for j := range s.Tasks {
			t := &s.Tasks[j]
			t.Sandbox = inward(s.Sandbox, t.Sandbox)
			if t.ExecutionMode == "" {
				t.ExecutionMode = ModeInteractive
			}
			if opts.ForceHeadless {
				t.ExecutionMode = ModeHeadless
			}
		}
		switch s.Type {
		case StepAgent:
			if s.Agent == nil {
				s.Agent = &AgentStep{}
			}
			a := s.Agent
			if a.Adapter == "" {
				a.Adapter = DefaultAgentAdapter
			}
			if a.ExecutionMode == "" {
				a.ExecutionMode = DefaultAgentMode
			}
			if opts.ForceHeadless {
				a.ExecutionMode = ModeHeadless
			}
			if a.OnFail == "" {
				a.OnFail = DefaultAgentOnFail
			}
			if s.Timeout == 0 {
				s.Timeout = DefaultAgentTimeout
			}
		case StepScript:
			if s.Script == nil {
				s.Script = &ScriptStep{}
			}
			if s.Script.OnFail == "" {
				s.Script.OnFail = DefaultScriptOnFail
			}
			if s.Timeout == 0 {
				s.Timeout = DefaultScriptTimeout
			}
		case StepLoop:
			if s.Loop == nil {
				s.Loop = &LoopStep{}
			}
			if s.Loop.MaxIterations == 0 {
				s.Loop.MaxIterations = DefaultMaxIterations
			}
			if s.Loop.OnMaxIterations == "" {
				s.Loop.OnMaxIterations = DefaultOnMaxIterations
			}
			for j := range s.Loop.Steps {
				s.Loop.Steps[j].Sandbox = inward(s.Sandbox, s.Loop.Steps[j].Sandbox)
			}
			normalizeSteps(s.Loop.Steps, opts)
		case StepMerge:
			if s.Merge == nil {
				s.Merge = &MergeStep{RequireReview: true}
			}
			m := s.Merge
			if opts.DefaultGate != nil && m.Gate == "" && !m.NoGate {
				m.Gate = *opts.DefaultGate
			}
			if m.Gate != "" && m.GateTimeout == 0 {
				m.GateTimeout = DefaultGateTimeout
			}
		}
	}
}

// inward is the sandbox: block of a step or task inside a loop or stage
// step whose own is outer: its own over outer's (lists add up). Merging
// again gives the same block, as Normalize must.
func inward(outer, own *sandbox.Config) *sandbox.Config {
	if outer == nil {
		return own
	}
	merged := *outer
	if own != nil {
		merged = outer.Merge(*own)
	}
	return &merged
}

// checker holds the semantic checks shared by Parse and Validate, so both
// report a problem with the same words.
type checker struct {
	opts LoadOptions
	// pos maps a field path to the position of its value in the file. It is
	// nil for Validate; then the positions of steps and tasks are used.
	pos map[string]Pos
	// broken holds the fields Parse already reported a structural error for
	// (a list where a string belongs, say): the semantic check of such a field
	// would only repeat the same problem in vaguer words.
	broken map[string]bool
	goal   string      // for {{.goal}} in prompts
	mcp    []MCPServer // the workflow's MCP servers, which every agent gets
	// commands holds the adapter and directory pairs whose command was looked for.
	commands map[string]bool
	// taskIDs are the ids of the tasks seen so far: unique in the file.
	taskIDs map[string]firstDef
	// grimoire is set while a grimoire is checked: its prompts are rendered
	// at run time, with variables the steps before them make.
	grimoire  bool
	stepNames map[string]firstDef // grimoires: every step's name
	spells    *render.Spells      // grimoires with a BaseDir: where spells are found
	once      map[string]bool     // messages to give once only
	errs      ErrorList
}

// firstDef remembers where an id was first seen, to point at it from the
// duplicate.
type firstDef struct {
	field string
	pos   Pos
}

func check(def *Definition, opts LoadOptions, pos map[string]Pos, broken map[string]bool, root Pos) ErrorList {
	c := &checker{opts: opts, pos: pos, broken: broken, goal: def.Goal, mcp: def.MCP, commands: map[string]bool{}, taskIDs: map[string]firstDef{}, once: map[string]bool{}}
	switch def.Kind {
	case "", KindStages:
	case KindGrimoire:
		c.checkGrimoire(def, root)
		return c.errs
	default:
		c.add(root, "kind", fmt.Sprintf("unknown kind %q", def.Kind))
		return c.errs
	}

	c.id("", "workflow", def.ID, root)
	if len(def.Steps) == 0 && !c.broken["stages"] {
		if c.notWritten("stages") {
			c.missing("", "stages", root)
		} else {
			c.add(c.at("stages", root), "stages", "a workflow needs at least one stage")
		}
	}

	stageIDs := map[string]firstDef{}
	for i, s := range def.Steps {
		sf := "stages[" + strconv.Itoa(i) + "]"
		spos := c.at(sf, orRoot(s.Pos, root))
		if s.Type != StepStage {
			c.add(spos, sf, fmt.Sprintf("step type %q is not supported yet", s.Type))
			continue
		}
		if c.id(sf, "stage", s.ID, spos) {
			c.unique(stageIDs, "stage id", s.ID, sf+".id", spos)
		}
		switch {
		case len(s.Tasks) > 0 || c.broken[sf+".tasks"]:
		case c.notWritten(sf + ".tasks"):
			c.missing(sf, "tasks", spos)
		default:
			msg := "a stage needs at least one task"
			if s.ID != "" {
				msg = fmt.Sprintf("stage %q needs at least one task", s.ID)
			}
			c.add(c.at(sf+".tasks", spos), sf+".tasks", msg)
		}
		for j, t := range s.Tasks {
			c.task(sf+".tasks["+strconv.Itoa(j)+"]", t, orRoot(t.Pos, spos), c.taskIDs)
		}
	}
	return c.errs
}

func (c *checker) task(tf string, t Task, tpos Pos, ids map[string]firstDef) {
	if c.id(tf, "task", t.ID, tpos) {
		c.unique(ids, "task id", t.ID, tf+".id", tpos)
	}

	// known: the adapter is registered, so its modes can be asked about.
	af := tf + ".adapter"
	known := false
	switch {
	case c.broken[af]:
	case strings.TrimSpace(t.Adapter) == "":
		c.missing(tf, "adapter", tpos)
	default:
		known = c.adapterKnown(af, t.Adapter, c.at(af, tpos))
	}
	effective, runnable := c.taskMode(tf, t, tpos, known)
	if known {
		c.mcpTaken(tf, t.Adapter, effective, t.MCP, tpos)
	}

	pf := tf + ".prompt"
	if !c.promptGiven(pf, t, tpos) {
		runnable = false // the launch check would say it again
	}
	prompt, promptKnown, runnable := c.taskPrompt(pf, t, tpos, runnable)
	if ls, ok := c.opts.Adapters.(LaunchSet); ok && runnable && promptKnown && !c.broken[pf] {
		if err := ls.CheckLaunch(t.Adapter, effective, prompt, t.ExtraArgs); err != nil {
			c.add(c.at(pf, tpos), pf, err.Error())
		}
	}

	for _, d := range []struct {
		key string
		v   Duration
	}{{"timeout", t.Timeout}, {"inactivityTimeout", t.InactivityTimeout}} {
		if d.v < 0 && !c.broken[tf+"."+d.key] {
			c.add(c.at(tf+"."+d.key, tpos), tf+"."+d.key, "must be a positive duration")
		}
	}

	if dir, dirOK := c.dir(tf, t, tpos); known && dirOK {
		c.installed(af, t.Adapter, effective, dir, c.at(af, tpos))
	}
}

// taskMode checks the task's execution mode, and that its adapter (known:
// registered) has it. effective is the mode it runs in; runnable says the
// adapter is known and has that mode.
func (c *checker) taskMode(tf string, t Task, tpos Pos, known bool) (effective string, runnable bool) {
	af, mf := tf+".adapter", tf+".executionMode"
	validMode := c.modeValid(mf, t.ExecutionMode, tpos)
	effective = t.ExecutionMode
	if effective == "" {
		effective = ModeInteractive
	}
	if c.opts.ForceHeadless {
		effective = ModeHeadless
	}
	runnable = known && (validMode || c.opts.ForceHeadless)
	ms, ok := c.opts.Adapters.(ModeSet)
	if !ok || !runnable {
		return effective, runnable
	}
	if !ms.HasMode(t.Adapter, effective) {
		msg := fmt.Sprintf("adapter %q has no %s mode", t.Adapter, effective)
		if c.opts.ForceHeadless && t.ExecutionMode != ModeHeadless {
			msg += " (--headless runs every task headless)"
		}
		c.add(c.at(mf, tpos), af, msg)
		return effective, false
	}
	if len(t.PendingInputs) > 0 && !ms.TakesQueue(t.Adapter, effective) {
		qf := tf + ".pendingInputs"
		c.add(c.at(qf, tpos), qf, fmt.Sprintf("adapter %q has no interaction_idle state in %s mode, so these would never be sent", t.Adapter, effective))
	}
	return effective, true
}

// promptGiven reports whether a task that needs a prompt (headless, acp)
// has one, and says so at pf when it has not.
func (c *checker) promptGiven(pf string, t Task, tpos Pos) bool {
	headless := t.ExecutionMode == ModeHeadless || c.opts.ForceHeadless
	if !(headless || t.ExecutionMode == ModeACP) || strings.TrimSpace(t.Prompt) != "" || c.broken[pf] {
		return true
	}
	msg := "a headless task needs a prompt"
	if !headless {
		msg = "an acp task needs a prompt (its session/prompt)"
	}
	if c.opts.ForceHeadless && t.ExecutionMode != ModeHeadless {
		msg = fmt.Sprintf("task %q has no prompt; --headless runs every task headless, and a headless task needs a prompt", t.ID)
	}
	c.add(c.at(pf, tpos), pf, msg)
	return false
}

// taskPrompt checks the task's prompt, and is the prompt as the agent will
// get it when that can be known here (known). A command-line prompt whose
// values have no place the shell quotes makes the task not runnable.
func (c *checker) taskPrompt(pf string, t Task, tpos Pos, runnable bool) (prompt string, known, stillRunnable bool) {
	prompt, known = t.Prompt, !strings.Contains(t.Prompt, "{{")
	if t.PromptIsCommand() && !c.broken[pf] && !known {
		// A command line: every value must have a place the shell quotes.
		n := len(c.errs)
		c.scriptCommand(t.ID, pf, t.Prompt, c.at(pf, tpos))
		if len(c.errs) > n {
			runnable = false
		}
	}
	switch {
	case c.grimoire:
		// Rendered at run time, with the outputs of the steps before.
		c.template(pf, t.Prompt, tpos)
	case c.broken[pf] || known:
	case t.PromptIsCommand():
		if c.opts.Vars != nil && runnable {
			prompt, known = c.rendered(pf, t, tpos, render.CommandPrompt)
		}
	default:
		if _, err := template.New("prompt").Funcs(render.Funcs()).Parse(t.Prompt); err != nil {
			// "template: prompt:1: unclosed action" → "template line 1: unclosed action"
			msg := strings.TrimPrefix(err.Error(), "template: prompt:")
			c.add(c.at(pf, tpos), pf, "template line "+msg)
		} else if c.opts.Vars != nil {
			// Rendered as run renders it, so a missing --set variable is
			// found here, at its task, and not by a run already under way.
			prompt, known = c.rendered(pf, t, tpos, render.Prompt)
		}
	}
	return prompt, known, runnable
}

// rendered is the task's prompt rendered with --set's variables, or the
// error at pf and the prompt unknown.
func (c *checker) rendered(pf string, t Task, tpos Pos, render func(id, text string, vars map[string]string, goal string) (string, error)) (string, bool) {
	out, err := render(t.ID, t.Prompt, c.opts.Vars, c.goal)
	if err != nil {
		c.add(c.at(pf, tpos), pf, strings.TrimPrefix(err.Error(), fmt.Sprintf("prompt of task %q: ", t.ID)))
		return t.Prompt, false
	}
	return out, true
}

// adapterKnown reports whether adapter is registered, and when a registry is
// given and it is not, says why at af.
func (c *checker) adapterKnown(af, adapter string, at Pos) bool {
	switch {
	case c.opts.Adapters == nil:
		return false
	case c.opts.Adapters.Has(adapter):
		return true
	}
	if bs, ok := c.opts.Adapters.(BrokenSet); ok {
		if err := bs.Broken(adapter); err != nil {
			c.add(at, af, brokenAdapterMsg(adapter, err))
			return false
		}
	}
	names := "no adapters are registered"
	if list := c.opts.Adapters.Names(); len(list) > 0 {
		names = "known: " + strings.Join(list, ", ")
	}
	c.add(at, af, fmt.Sprintf("unknown adapter %q (%s)", adapter, names))
	return false
}

// modeValid reports whether mode is empty or one of the two. One that is not
// is reported once, here: the checks that depend on the mode would only
// repeat it.
func (c *checker) modeValid(mf, mode string, fallback Pos) bool {
	switch mode {
	case "", ModeInteractive, ModeHeadless, ModeACP:
		return true
	}
	if !c.broken[mf] {
		c.add(c.at(mf, fallback), mf, yamlnode.OneOf(mode, ModeInteractive, ModeHeadless, ModeACP))
	}
	return false
}

// installed checks that the command of a registered adapter is installed, for
// an agent running in dir, when the options ask for it. Once per adapter and
// directory: ten tasks of an agent that is not installed are one problem.
func (c *checker) installed(af, adapter, mode, dir string, at Pos) {
	cs, ok := c.opts.Adapters.(CommandSet)
	if !ok || c.opts.Commands == CheckOff {
		return
	}
	mcs, byMode := c.opts.Adapters.(ModeCommandSet)
	if !byMode || mode != ModeACP {
		mode = "" // every other mode starts the adapter's command
	}
	key := adapter + "\x00" + mode + "\x00" + dir
	if c.commands[key] {
		return
	}
	c.commands[key] = true
	check := func() error { return cs.CheckCommand(adapter, dir) }
	if mode != "" {
		check = func() error { return mcs.CheckModeCommand(adapter, mode, dir) }
	}
	if err := check(); err != nil {
		c.errs = append(c.errs, &Error{Pos: at, Field: af, Msg: err.Error(), Warning: c.opts.Commands == CheckWarn})
	}
}

// dir checks the task's cwd when the base directory is known, and returns
// the directory the task would run in and whether it is usable.
func (c *checker) dir(tf string, t Task, tpos Pos) (string, bool) {
	if c.opts.BaseDir == "" {
		return "", false
	}
	dir := c.opts.BaseDir
	switch {
	case t.Cwd == "":
		return dir, true
	case filepath.IsAbs(t.Cwd):
		dir = t.Cwd
	default:
		dir = filepath.Join(c.opts.BaseDir, t.Cwd)
	}
	cf := tf + ".cwd"
	if c.broken[cf] {
		return dir, false
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.add(c.at(cf, tpos), cf, fmt.Sprintf("directory %s does not exist (cwd is relative to the base directory %s)", dir, c.opts.BaseDir))
	case err != nil:
		c.add(c.at(cf, tpos), cf, fmt.Sprintf("cannot use %s: %v", dir, err))
	case !st.IsDir():
		c.add(c.at(cf, tpos), cf, fmt.Sprintf("%s is not a directory", dir))
	default:
		return dir, true
	}
	return dir, false
}

// brokenAdapterMsg names an adapter whose file did not load and its first
// problem; "vibeteam adapters" lists them all.
func brokenAdapterMsg(name string, err error) string {
	first, _, more := strings.Cut(err.Error(), "\n")
	msg := fmt.Sprintf("adapter %q cannot be used: its file is broken: %s", name, first)
	if more {
		msg += " (vibeteam adapters lists every problem)"
	}
	return msg
}

// id checks an id that must be present and usable as a file name (task ids
// name log files and the checkpoint refers to them). It reports whether the id
// is worth checking for uniqueness.
func (c *checker) id(parent, what, id string, parentPos Pos) bool {
	f := "id"
	if parent != "" {
		f = parent + ".id"
	}
	if c.broken[f] {
		return false
	}
	if id == "" {
		c.missing(parent, "id", parentPos)
		return false
	}
	if p := idProblem(id); p != "" {
		c.add(c.at(f, parentPos), f, fmt.Sprintf("invalid %s id %q: %s", what, id, p))
		return false
	}
	return true
}

func (c *checker) unique(seen map[string]firstDef, what, id, field string, fallback Pos) {
	p := c.at(field, fallback)
	first, dup := seen[id]
	if !dup {
		seen[id] = firstDef{field: field, pos: p}
		return
	}
	where := first.field
	if first.pos.Line > 0 {
		where = "line " + strconv.Itoa(first.pos.Line)
	}
	c.add(p, field, fmt.Sprintf("duplicate %s %q (first defined at %s)", what, id, where))
}

// missing reports a required value that is empty: at the value when the file
// wrote one (id: ""), else at the mapping that lacks the key.
func (c *checker) missing(parent, key string, p Pos) {
	f := joinField(parent, key)
	if vp, written := c.pos[f]; written {
		c.add(vp, f, yamlnode.MsgNotEmpty)
		return
	}
	c.add(p, parent, yamlnode.MissingKey(key))
}

// notWritten is true when a file is being checked and it lacks the key
// behind field: "missing key" says more than "needs at least one" then.
func (c *checker) notWritten(field string) bool {
	if c.pos == nil {
		return false
	}
	_, written := c.pos[field]
	return !written
}

// at is the position of field's value if the file had one, else fallback.
func (c *checker) at(field string, fallback Pos) Pos {
	if p, ok := c.pos[field]; ok {
		return p
	}
	return fallback
}

func (c *checker) add(p Pos, field, msg string) {
	c.errs = append(c.errs, &Error{Pos: p, Field: field, Msg: msg})
}

// orRoot keeps the file name on errors of a stored definition, whose steps
// and tasks have lost their positions.
func orRoot(p, root Pos) Pos {
	if p.Line == 0 && p.File == "" {
		return Pos{File: root.File}
	}
	return p
}

func joinField(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// idProblem says why id cannot be used, or "". Ids end up in paths
// (logs/<session>/<task>.log), so they must not be able to climb out of
// their directory or carry control characters into a terminal.
func idProblem(id string) string {
	switch {
	case id == "." || id == "..":
		return `must not be "." or ".."`
	case strings.ContainsAny(id, `/\`):
		return `must not contain "/" or "\"`
	case strings.TrimSpace(id) != id:
		return "must not start or end with spaces"
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return "must not contain control characters"
	}
	return ""
}

// mcpTaken reports MCP servers given to an adapter that cannot pass them to
// its CLI: the agent would start without them.
func (c *checker) mcpTaken(field, adapter, mode string, own []MCPServer, pos Pos) {
	ms, ok := c.opts.Adapters.(MCPSet)
	if !ok || len(MergeMCP(c.mcp, own)) == 0 || ms.TakesMCP(adapter) {
		return
	}
	if mms, ok := ms.(ModeMCPSet); ok && mms.TakesMCPIn(adapter, mode) {
		return
	}
	f := field + ".adapter"
	if len(own) > 0 {
		f = field + ".mcp"
	}
	c.add(c.at(f, pos), f, fmt.Sprintf("adapter %q gives no MCP servers to its CLI (its file has no mcp:), and this agent has some", adapter))
}
