// Package previewcmd is `vibeteam preview`: what a grimoire would do,
// walked by run's interpreter and rendered with run's scope, nothing run.
package previewcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/ui"
)

// Options are what `vibeteam preview` is asked.
type Options struct {
	IO       cmdutil.IO
	Base     string   // the project's base dir
	Arg      string   // NAME|FILE; "" to choose by the bead
	Bead     string   // --bead ID
	BeadFile string   // --bead-file
	Sets     []string // --set key=value
	Full     bool     // --full
}

// NewCmdPreview is the `preview` command. Its action gathers the Options
// and hands them to runF (nil: Run).
func NewCmdPreview(streams cmdutil.IO, runF func(*Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
	return &ucli.Command{
		Name:      "preview",
		Usage:     "show what a grimoire would do, running nothing: its steps with their rendered prompts and commands, every problem as file:line",
		ArgsUsage: "NAME|FILE  (or none, with --bead or --bead-file)",
		Description: `Shows what "vibeteam run NAME|FILE" would do with a grimoire, and runs
nothing: no agent, no command, no process, and no file or directory is
written (not even .vibeteam/). The grimoire is found as run finds it (a
file, .vibeteam/grimoires/NAME.yaml and the other named folders, or a
built-in) and checked as run checks it. It is walked by run's own
interpreter and rendered with run's own template scope, each loop once,
so every template shows as run will render it.

Each step is printed in file order, the steps of a loop indented, with its
file:line, type, name and condition, and under it what it would do: the
command of a script step, shell-quoted as it will run; the inputs and the
rendered spell of an agent step (--full: the whole prompt, system prompt
included); the prompts of a stage's tasks.

What only the run can know is shown as a placeholder: ⟨tests.output⟩,
⟨impl.outputs.notes⟩ (any key an agent reports), ⟨previous.failed⟩,
⟨loop_entry.output⟩, ⟨quality.iteration⟩. Text that depends on one shows
each branch: ⟨if .previous.failed⟩...⟨else⟩...⟨end⟩. A condition (when)
that depends only on --set variables and the bead is evaluated.

Every template is checked against the steps that have run at its point of
the file: a misspelt key (.tests.outptu; .bead.titel when a bead is given),
a step that does not exist or has not run yet, an unknown variable, spell
or partial is an error. Problems go to stderr, one a line, as
file:line:col: message; warnings (a value inside quotes in a command,
{{raw}}) too.

--bead ID reads the bead (.bead) with "bd show ID --json", as run does
(bd is only read, no status changes); --bead-file reads it from a file,
JSON as "bd show ID --json" prints it, an object or an array of one.
With either and no NAME, the grimoire is chosen as "run --bead" chooses
it, and the first line says which rule chose it: the bead's
grimoire:<name> label, .vibeteam/config.yaml by issue type, its default,
or implement-bead. Open blockers, which run refuses without --force, are
a warning. Without a bead, .bead is an empty object, as in a run without
a bead, and a template that reads a key of it gets a placeholder and a
warning.

A stage workflow is shown as its stages and tasks with their prompts.

Exit status: 0 when the grimoire is valid (warnings allowed), 2 otherwise.`,
		Flags: []ucli.Flag{
			cmdutil.BaseDirFlag,
			&ucli.StringFlag{Name: "bead", Usage: "render .bead from bead `ID` (read with bd show); without NAME, the grimoire run --bead would choose"},
			&ucli.StringFlag{Name: "bead-file", Usage: "render .bead from `FILE`, JSON as `bd show ID --json` prints it (an object, or an array of one)"},
			&ucli.StringSliceFlag{Name: "set", Usage: "template variable `key=value`, as run takes it (repeatable)"},
			&ucli.BoolFlag{Name: "full", Usage: "show each agent step's whole prompt, the system prompt around the spell included"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 1 {
				return cmdutil.Exitf(cmdutil.ExitUsage, "preview takes one grimoire file or name (see vibeteam preview --help)")
			}
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			return runF(&Options{IO: streams, Base: base, Arg: c.Args().First(), Bead: c.String("bead"),
				BeadFile: c.String("bead-file"), Sets: c.StringSlice("set"), Full: c.Bool("full")})
		},
	}
}

// Run previews the grimoire (or stage workflow) opts name.
func Run(opts *Options) error {
	streams, base := opts.IO, opts.Base
	vars, err := render.ParseSets(opts.Sets)
	if err != nil {
		return err
	}
	bead, err := previewBead(opts)
	if err != nil {
		return err
	}
	arg := opts.Arg
	if arg == "" {
		if bead == nil {
			return cmdutil.Exitf(cmdutil.ExitUsage, "preview needs a grimoire file or name, or a bead (--bead ID or --bead-file FILE) to choose one (see vibeteam preview --help)")
		}
		name, rule, err := cmdutil.SelectGrimoire(base, bead)
		if err != nil {
			return err
		}
		fmt.Fprintf(streams.Out, "bead %s: grimoire %s (%s)\n\n", ui.Safe(beads.Bead(bead).ID()), ui.Safe(name), ui.Safe(rule))
		arg = name
	}
	reg, err := cmdutil.LoadRegistry(base)
	if err != nil {
		return err
	}
	cmdutil.WarnBrokenAdapters(streams.Err, reg)
	found, err := workflow.Locate(arg, base)
	if err != nil {
		return err
	}
	// validate's checks: an agent CLI that is not installed here is a
	// warning, as the grimoire may run elsewhere.
	def, probs := found.Diagnose(workflow.LoadOptions{
		Adapters: reg,
		Vars:     vars,
		BaseDir:  base,
		Commands: workflow.CheckWarn,
	})
	if def == nil || probs.HasErrors() {
		printProblems(streams.Err, probs)
		return cmdutil.Exitf(cmdutil.ExitUsage, "%s is invalid: %s; nothing was run", found.Path, countErrors(probs))
	}
	from := found.Path
	if found.Builtin() {
		from = "built-in " + arg
	}
	beadID := ""
	if bead != nil {
		beadID = beads.Bead(bead).ID()
	}
	pv := &previewer{out: streams.Out, full: opts.Full, load: probs, sandbox: cmdutil.NewSandboxView(base, def, bead != nil, beadID)}
	if def.Kind == workflow.KindGrimoire {
		pv.grimoire(def, from, vars, bead, base)
	} else {
		if bead != nil {
			return cmdutil.Exitf(cmdutil.ExitUsage, "--bead and --bead-file are for grimoires; %s is a stage workflow", def.Source)
		}
		pv.stages(def, from, vars)
	}
	all := append(probs, pv.probs...)
	printProblems(streams.Err, all)
	if all.HasErrors() {
		return cmdutil.Exitf(cmdutil.ExitUsage, "%s: %s; nothing was run", def.Source, countErrors(all))
	}
	return nil
}

// previewBead reads the bead of --bead ID (through bd, read only) or
// --bead-file; nil without either. Open blockers are a warning: preview
// shows what run would do once they are closed, or with --force.
func previewBead(opts *Options) (map[string]any, error) {
	streams, base := opts.IO, opts.Base
	id, file := opts.Bead, opts.BeadFile
	switch {
	case id != "" && file != "":
		return nil, cmdutil.Exitf(cmdutil.ExitUsage, "--bead and --bead-file: one or the other")
	case file != "":
		b, err := beads.ReadFile(file)
		if err != nil {
			return nil, err
		}
		return b, nil
	case id == "":
		return nil, nil
	}
	client, b, err := cmdutil.ShowBead(streams, base, id)
	if err != nil {
		return nil, err
	}
	blockers, err := cmdutil.BeadBlockers(client, b)
	if err != nil {
		return nil, cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
	}
	if len(blockers) > 0 {
		fmt.Fprintf(streams.Err, "warning: bead %s is blocked by %s, still open: run refuses it until they are closed, or with --force\n", ui.Safe(id), ui.Safe(strings.Join(blockers, ", ")))
	}
	return b, nil
}

// previewer prints a preview and gathers its problems.
type previewer struct {
	out   io.Writer
	full  bool
	scope *render.Scope // dry
	spell *render.Spells
	load  workflow.ErrorList // the problems loading found (warnings only)
	probs workflow.ErrorList
	// warned are the warnings of the renderings since the last drain.
	warned []string
	// orig is the step of the grimoire each step of the walked copy is.
	orig  map[*workflow.Step]*workflow.Step
	depth int // of the loops the walk is in
	// sandbox is the run's sandbox, shown before the steps.
	sandbox *cmdutil.SandboxView
}

func (pv *previewer) printf(format string, args ...any) { fmt.Fprintf(pv.out, format, args...) }

// block prints text under a step, each line after a bar.
func (pv *previewer) block(indent, text string) {
	text = strings.TrimRight(text, "\n")
	for _, l := range strings.Split(text, "\n") {
		if l == "" {
			pv.printf("%s│\n", indent)
		} else {
			pv.printf("%s│ %s\n", indent, ui.SafeLine(l))
		}
	}
}

// problem records err (which may join several) at pos.
func (pv *previewer) problem(pos workflow.Pos, err error) {
	if err == nil {
		return
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			pv.problem(pos, e)
		}
		return
	}
	pv.probs = append(pv.probs, &workflow.Error{Pos: pos, Msg: err.Error()})
}

// drain returns the warnings the scope told of since the last drain.
func (pv *previewer) drain() []string {
	w := pv.warned
	pv.warned = nil
	return w
}

// warnings records warnings at pos, but not those loading reported already
// (the quoting of a command): there they have no `step "x": command: `.
func (pv *previewer) warnings(pos workflow.Pos, step, field string, warns []string) {
	for _, w := range warns {
		short := strings.TrimPrefix(w, fmt.Sprintf("step %q: %s: ", step, field))
		if slices.ContainsFunc(pv.load, func(e *workflow.Error) bool {
			return e.Warning && e.Pos == pos && e.Msg == short
		}) {
			continue
		}
		pv.probs = append(pv.probs, &workflow.Error{Pos: pos, Msg: w, Warning: true})
	}
}

func (pv *previewer) grimoire(def *workflow.Definition, from string, vars map[string]string, bead map[string]any, base string) {
	pv.printf("grimoire %s, from %s\n", ui.Safe(def.ID), ui.Safe(from))
	if def.Description != "" {
		pv.printf("  %s\n", ui.Safe(def.Description))
	}
	if def.Timeout > 0 {
		pv.printf("  timeout %s\n", duration(def.Timeout))
	}
	if len(vars) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			kv = append(kv, k+"="+vars[k])
		}
		pv.printf("  variables: %s\n", ui.Safe(strings.Join(kv, ", ")))
	}
	if bead != nil {
		id, _ := bead["id"].(string)
		title, _ := bead["title"].(string)
		pv.printf("  bead: %s\n", ui.Safe(strings.TrimSpace(id+" "+title)))
	}
	pv.printf("  nothing is run: ⟨...⟩ is a value known only when the grimoire runs\n")
	pv.sandbox.Print(pv.out, "  ")
	pv.printf("\n")

	goal := def.Goal
	if g, ok := vars["goal"]; ok {
		goal = g // as run does: a --set goal is the goal
	}
	// The scope and the interpreter of a run, dry: the scope's results
	// are placeholders, and the one runner prints each step and runs
	// nothing.
	pv.scope = render.NewDryScope(goal, vars, bead)
	pv.scope.Workflow = def.ID
	pv.scope.Warn = func(_, w string) { pv.warned = append(pv.warned, w) }
	pv.spell = render.NewSpells(base)
	declare(pv.scope, def.Steps)
	pv.orig = map[*workflow.Step]*workflow.Step{}
	steps := pv.dryCopy(def.Steps)
	in := &flow.Interpreter{
		Runners: map[vocab.StepType]flow.Runner{},
		Scope:   (*dryScope)(pv),
		Store:   dryStore{},
	}
	for _, t := range []vocab.StepType{workflow.StepScript, workflow.StepAgent, workflow.StepStage, workflow.StepMerge} {
		in.Runners[t] = (*dryRunner)(pv)
	}
	if out := in.Run(context.Background(), steps); out.Status != flow.Done {
		// Nothing fails in a dry walk; say so if it does.
		pv.problem(workflow.Pos{File: def.Source}, fmt.Errorf("preview stopped at %s: %s", out.Step, out.Reason))
	}
	if opt := pv.scope.Optional(); len(opt) > 0 {
		pv.printf("\noptional (empty, with a warning, when the agent does not report it): %s\n", ui.Safe(strings.Join(opt, ", ")))
	}
}

// declare tells the scope of every step, nested ones included.
func declare(ps *render.Scope, steps []workflow.Step) {
	for _, s := range steps {
		ps.Declare(s.Label(), s.Output, fmt.Sprintf("line %d", s.Pos.Line))
		if s.Loop != nil {
			ps.DeclareLoop(s.Label(), stepNames(s.Loop.Steps))
			declare(ps, s.Loop.Steps)
		}
	}
}

// dryCopy copies steps for the dry walk: each loop runs one iteration and
// then exits, as every template of its steps is rendered once.
func (pv *previewer) dryCopy(steps []workflow.Step) []workflow.Step {
	out := slices.Clone(steps)
	for i := range out {
		if l := steps[i].Loop; l != nil {
			c := *l
			c.MaxIterations, c.OnMaxIterations = 1, workflow.OnMaxExit
			c.Steps = pv.dryCopy(l.Steps)
			out[i].Loop = &c
		}
		pv.orig[&out[i]] = &steps[i]
	}
	return out
}

// dryScope is the flow.Scope of the dry walk: the dry render.Scope. Its When
// prints the step's header and condition, and lets every step run, so that
// every template is shown.
type dryScope previewer

func (d *dryScope) When(s *workflow.Step) (bool, error) {
	pv := (*previewer)(d)
	pv.header(pv.orig[s])
	pv.when(s)
	return true, nil
}

func (d *dryScope) Record(s *workflow.Step, _ flow.Result) {
	d.scope.Record(s.Label(), s.Output, render.StepResult{})
}

func (d *dryScope) EnterLoop(s *workflow.Step) {
	d.scope.EnterLoop(s.Label())
	d.depth++
}

func (d *dryScope) Iteration(*workflow.Step, flow.Addr, int) { d.scope.NextIteration() }

func (d *dryScope) ExitLoop(*workflow.Step) {
	d.scope.ExitLoop()
	d.depth--
}

// dryRunner prints what a step would do, and runs nothing.
type dryRunner previewer

func (d *dryRunner) Run(_ context.Context, s *workflow.Step, _ flow.Addr) flow.Result {
	(*previewer)(d).body(s)
	return flow.Result{Status: flow.Done}
}

// dryStore keeps nothing: no run has finished before.
type dryStore struct{}

func (dryStore) Finished(flow.Addr) (flow.Result, bool)       { return flow.Result{}, false }
func (dryStore) Started(flow.Addr, *workflow.Step)            {}
func (dryStore) Ended(flow.Addr, *workflow.Step, flow.Result) {}

// stepNames are the names and aliases of steps, nested ones included.
func stepNames(steps []workflow.Step) []string {
	var names []string
	for _, s := range steps {
		names = append(names, s.Label())
		if s.Output != "" {
			names = append(names, s.Output)
		}
		if s.Loop != nil {
			names = append(names, stepNames(s.Loop.Steps)...)
		}
	}
	return names
}

// at is where a step is, as file:line.
func at(p workflow.Pos) string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// stepDetails are what a step's header says after its name.
func stepDetails(s *workflow.Step) string {
	var d []string
	if s.Output != "" {
		d = append(d, "output "+s.Output)
	}
	switch {
	case s.Agent != nil:
		d = append(d, s.Agent.Adapter, s.Agent.ExecutionMode)
		if s.Agent.OnFail != workflow.DefaultAgentOnFail {
			d = append(d, "on_fail "+s.Agent.OnFail)
		}
		if s.Timeout != workflow.DefaultAgentTimeout {
			d = append(d, "timeout "+duration(s.Timeout))
		}
	case s.Script != nil:
		if s.Script.OnFail != workflow.DefaultScriptOnFail {
			d = append(d, "on_fail "+s.Script.OnFail)
		}
		if s.Script.OnSuccess != "" {
			d = append(d, "on_success "+s.Script.OnSuccess)
		}
		if s.Timeout != workflow.DefaultScriptTimeout {
			d = append(d, "timeout "+duration(s.Timeout))
		}
	case s.Loop != nil:
		d = append(d, fmt.Sprintf("at most %d iterations, then %s", s.Loop.MaxIterations, s.Loop.OnMaxIterations))
	}
	if len(d) == 0 {
		return ""
	}
	return " (" + strings.Join(d, ", ") + ")"
}

const notRendered = "(not rendered: see the errors below)"

// header prints a step's file:line, type, name and details.
func (pv *previewer) header(s *workflow.Step) {
	indent := strings.Repeat("    ", pv.depth)
	pv.printf("%s%s  %s %s%s\n", indent, ui.Safe(at(s.Pos)), s.Type, ui.Safe(s.Label()), ui.Safe(stepDetails(s)))
}

// when prints a step's condition, evaluated when only known values decide it.
func (pv *previewer) when(s *workflow.Step) {
	if s.When == "" {
		return
	}
	label := s.Label()
	ok, err := pv.scope.When(label, s.When)
	undecided := errors.Is(err, render.ErrRunTime)
	if undecided {
		err = nil
	}
	pos := s.PosOf("when")
	pv.warnings(pos, label, fmt.Sprintf("when %q", s.When), pv.drain())
	pv.problem(pos, err)
	note := ""
	switch {
	case err != nil:
		note = "  " + notRendered
	case undecided:
		note = "  (decided when it runs)"
	case !ok:
		note = "  → false now: the step would be skipped"
	default:
		note = "  → true now"
	}
	pv.printf("%s    when %s%s\n", strings.Repeat("    ", pv.depth), ui.Safe(s.When), note)
}

// body prints what a step (not a loop) would do.
func (pv *previewer) body(s *workflow.Step) {
	body := strings.Repeat("    ", pv.depth+1)
	label := s.Label()
	switch s.Type {
	case workflow.StepScript:
		cmd, warns, err := pv.scope.Command(label, s.Script.Command)
		pos := s.PosOf("command")
		pv.warnings(pos, label, "command", warns)
		pv.problem(pos, err)
		if err != nil {
			pv.printf("%s$ %s\n", body, notRendered)
			break
		}
		lines := strings.Split(strings.TrimRight(cmd, "\n"), "\n")
		for i, l := range lines {
			lead := "$ "
			if i > 0 {
				lead = "  "
			}
			pv.printf("%s%s%s\n", body, lead, ui.SafeLine(l))
		}
	case workflow.StepAgent:
		pv.agent(s, body)
	case workflow.StepStage:
		for _, t := range s.Tasks {
			field := "tasks." + t.ID + ".prompt"
			prompt, warns, err := pv.scope.TaskPrompt(label, t.ID, t.Prompt, t.PromptIsCommand())
			warns = append(warns, pv.drain()...)
			pv.warnings(t.Pos, label, field, warns)
			pv.problem(t.Pos, err)
			pv.printf("%stask %s (%s, %s):\n", body, ui.Safe(t.ID), ui.Safe(t.Adapter), ui.Safe(t.ExecutionMode))
			if err != nil {
				pv.printf("%s%s\n", body, notRendered)
			} else {
				pv.block(body, prompt)
			}
		}
	case workflow.StepMerge:
		pv.printf("%smerges the worktree back (require_review: %t)\n", body, s.Merge.RequireReview)
	}
}

func (pv *previewer) agent(s *workflow.Step, body string) {
	label, a := s.Label(), s.Agent
	inputs := map[string]string{}
	for _, in := range a.Input {
		field := "input." + in.Name
		v, err := pv.scope.Render(label, field, in.Value)
		pos := s.PosOf(field)
		pv.warnings(pos, label, field, pv.drain())
		pv.problem(pos, err)
		switch {
		case err != nil:
			// The spell is still checked, with the input as a placeholder.
			inputs[in.Name] = render.Placeholder("input " + in.Name)
			pv.printf("%sinput %s: %s\n", body, ui.Safe(in.Name), notRendered)
		case strings.Contains(strings.TrimRight(v, "\n"), "\n"):
			inputs[in.Name] = v
			pv.printf("%sinput %s:\n", body, ui.Safe(in.Name))
			pv.block(body, v)
		default:
			inputs[in.Name] = v
			pv.printf("%sinput %s: %s\n", body, ui.Safe(in.Name), ui.Safe(v))
		}
	}
	pp, err := pv.scope.AgentPromptParts(label, pv.spell, a.Spell, inputs)
	pos := s.PosOf("spell")
	pv.warnings(pos, label, "spell", pv.drain())
	pv.problem(pos, err)
	name := "inline spell"
	if pp.Spell.Source != "inline" && pp.Spell.Source != "" {
		name = fmt.Sprintf("spell %s (%s)", strings.TrimSuffix(pp.Spell.Name, ".md"), pp.Spell.Source)
	} else if pp.Spell.Source == "" {
		name = "spell " + strings.TrimSpace(a.Spell)
	}
	switch {
	case err != nil:
		pv.printf("%s%s: %s\n", body, ui.Safe(name), notRendered)
	case pv.full:
		pv.printf("%sprompt: %s in the system prompt (%s):\n", body, ui.Safe(name), ui.Safe(pp.System.Source))
		pv.block(body, pp.Prompt)
	default:
		pv.printf("%s%s:\n", body, ui.Safe(name))
		pv.block(body, pp.Content)
		pv.printf("%s(in the system prompt, %s; --full shows the whole prompt)\n", body, ui.Safe(pp.System.Source))
	}
}

// stages previews a stage workflow: its stages and tasks, each prompt
// rendered as run renders it.
func (pv *previewer) stages(def *workflow.Definition, from string, vars map[string]string) {
	pv.printf("workflow %s, from %s\n", ui.Safe(def.ID), ui.Safe(from))
	if def.Goal != "" {
		pv.printf("  goal: %s\n", ui.Safe(def.Goal))
	}
	pv.printf("  nothing is run: the stages run in order, the tasks of a stage in parallel\n")
	pv.sandbox.Print(pv.out, "  ")
	pv.printf("\n")
	for _, st := range def.Stages() {
		pv.printf("%s  stage %s\n", ui.Safe(at(st.Pos)), ui.Safe(st.Label()))
		for _, t := range st.Tasks {
			pv.printf("    %s  task %s (%s, %s)\n", ui.Safe(at(t.Pos)), ui.Safe(t.ID), ui.Safe(t.Adapter), ui.Safe(t.ExecutionMode))
			if t.Prompt == "" {
				continue
			}
			prompt, err := t.RenderPrompt(vars, def.Goal)
			if err != nil {
				pv.problem(t.Pos, err)
				pv.printf("        %s\n", notRendered)
				continue
			}
			pv.block("        ", prompt)
		}
	}
}

// duration is a workflow duration as it would be written: 5m, 1h30m.
func duration(d workflow.Duration) string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// printProblems prints problems in file order, each once.
func printProblems(w io.Writer, probs workflow.ErrorList) {
	sorted := slices.Clone(probs)
	slices.SortStableFunc(sorted, func(a, b *workflow.Error) int {
		if c := strings.Compare(a.Pos.File, b.Pos.File); c != 0 {
			return c
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	seen := map[string]bool{}
	for _, p := range sorted {
		line := p.Error()
		if !seen[line] {
			seen[line] = true
			fmt.Fprintln(w, ui.Safe(line))
		}
	}
}

// countErrors is "1 error", "3 errors" (warnings are not counted).
func countErrors(probs workflow.ErrorList) string {
	n := 0
	for _, p := range probs {
		if !p.Warning {
			n++
		}
	}
	if n == 1 {
		return "1 error"
	}
	return fmt.Sprintf("%d errors", n)
}
