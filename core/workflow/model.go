// Package workflow holds the one model both file kinds load into (stage
// workflows and grimoires), its loader and its validation.
package workflow

import (
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// Kinds of definition files. Both load into Definition: a stage workflow is a
// list of steps of type "stage"; a grimoire is a list of steps of any type.
// The kind is told from the file's top level: "steps" or "stages".
const (
	KindStages   = "stages"
	KindGrimoire = "grimoire"
)

// Step types. A stage workflow has only stage steps; a grimoire may have all.
const (
	StepStage  = vocab.StepStage
	StepAgent  = vocab.StepAgent
	StepScript = vocab.StepScript
	StepLoop   = vocab.StepLoop
	StepMerge  = vocab.StepMerge
)

// StepType is what a step is (vocab's).
type StepType = vocab.StepType

// StepTypes are the step types of a grimoire, in the order messages list them.
var StepTypes = vocab.StepTypes

// What a grimoire step does on failure or success (on_fail, on_success,
// on_max_iterations).
const (
	OnFailContinue = "continue" // go on; {{.previous.failed}} is true
	OnFailBlock    = "block"    // stop the grimoire, resumable after a fix

	OnSuccessExitLoop = "exit_loop" // leave the enclosing loop at once

	// A loop that ran out of iterations without a step exiting it:
	OnMaxBlock    = "block"    // blocks the grimoire, resumable after a fix
	OnMaxExit     = "exit"     // is left; the grimoire goes on
	OnMaxContinue = "continue" // lets the grimoire go on after it
)

// Defaults of a grimoire, filled in by Normalize so that the interpreter and
// the stored session never re-derive them.
const (
	DefaultGrimoireTimeout = Duration(2 * time.Hour)
	DefaultAgentTimeout    = Duration(15 * time.Minute)
	DefaultScriptTimeout   = Duration(5 * time.Minute)
	DefaultMaxIterations   = 10
	// MaxLoopDepth is how deep loops may nest.
	MaxLoopDepth           = 32
	DefaultAgentAdapter    = "claude"
	DefaultAgentMode       = ModeHeadless
	DefaultAgentOnFail     = OnFailContinue
	DefaultScriptOnFail    = OnFailBlock
	DefaultOnMaxIterations = OnMaxBlock
)

// Execution modes of a task.
const (
	ModeInteractive = "interactive"
	ModeHeadless    = "headless"
	// ModeACP talks to the agent over the Agent Client Protocol (the
	// adapter's modes.acp).
	ModeACP = "acp"
)

// Pos is a position in a source file. The zero Pos means "unknown" (for
// example a definition reloaded from a session file).
type Pos = yamlnode.Pos

// Definition is a loaded workflow of either kind.
type Definition struct {
	Kind string `json:"kind"`
	// ID is a stage workflow's id or a grimoire's name.
	ID          string `json:"id"`
	Goal        string `json:"goal,omitempty"`
	Description string `json:"description,omitempty"` // grimoires
	// Timeout limits the whole run of a grimoire (DefaultGrimoireTimeout
	// when not written). Zero for stage workflows: they have none.
	Timeout Duration `json:"timeout,omitempty"`
	// Budget limits what the agents of a grimoire's run may spend, all
	// together; nil: no limit of its own.
	Budget *budget.Limit `json:"budget,omitempty"`
	Source string        `json:"source,omitempty"` // the file it was loaded from, if any
	Steps  []Step        `json:"steps"`
	// MCP are the MCP servers every agent of the workflow gets (a task or
	// an agent step adds its own; on a name both have, its own wins).
	MCP []MCPServer `json:"mcp,omitempty"`
	// Secrets names --set variables and task env: keys whose values are
	// secret, besides those whose name says so (IsSecret): they reach
	// the processes but are written to sessions and logs as ***.
	Secrets []string `json:"secrets,omitempty"`
	// Sandbox is the workflow's sandbox: block, over the project's; a
	// step or task may add its own. nil: not written.
	Sandbox *sandbox.Config `json:"sandbox,omitempty"`
}

// IsSecret reports whether the value of the --set variable or env: key
// name is a secret: its name holds TOKEN, KEY, SECRET or PASSWORD (in any
// case), or the definition lists it under secrets:.
func (d *Definition) IsSecret(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range []string{"TOKEN", "KEY", "SECRET", "PASSWORD"} {
		if strings.Contains(up, w) {
			return true
		}
	}
	return d != nil && slices.Contains(d.Secrets, name)
}

// Step is one element of a definition's body. Type says which of the
// type-specific parts is set: Tasks for a stage, else the pointer of the same
// name (Agent, Script, Loop, Merge).
type Step struct {
	Type vocab.StepType `json:"type"`
	// ID names a stage of a stage workflow; Name names a grimoire step (a
	// grimoire's stage steps included). Label returns whichever is set.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// When, a template, decides at run time whether the step runs; it must
	// render to true or false. Empty: always.
	When string `json:"when,omitempty"`
	// Timeout of one run of the step; Normalize fills in the defaults of
	// agent and script steps. Zero: none (loops, stages, merges).
	Timeout Duration `json:"timeout,omitempty"`
	// Output is another name the step's result is read by ({{.findings}},
	// {{.findings.output}}), besides its own.
	Output string `json:"output,omitempty"`

	Tasks  []Task      `json:"tasks,omitempty"`
	Agent  *AgentStep  `json:"agent,omitempty"`
	Script *ScriptStep `json:"script,omitempty"`
	Loop   *LoopStep   `json:"loop,omitempty"`
	Merge  *MergeStep  `json:"merge,omitempty"`
	// Sandbox is the step's own sandbox: block, over the workflow's (for
	// a merge step: its gate's).
	Sandbox *sandbox.Config `json:"sandbox,omitempty"`

	// Pos is where the step's mapping starts. Positions holds where the
	// value of each key was written ("when", "command", "input.test_output"),
	// for errors found later, when the step is rendered; see PosOf.
	Pos       Pos            `json:"-"`
	Positions map[string]Pos `json:"-"`
}

// Label is the step's name, or for a stage of a stage workflow its id.
func (s *Step) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.ID
}

// PosOf is where the value of key was written in the file, or the step's own
// position when that is not known.
func (s *Step) PosOf(key string) Pos {
	if p, ok := s.Positions[key]; ok {
		return p
	}
	return s.Pos
}

// AgentStep runs one agent on a spell.
type AgentStep struct {
	// Spell names a spell file (.vibeteam/spells/NAME.md, then the
	// built-ins) or, when it holds a line break, is the spell itself.
	Spell string `json:"spell"`
	// Input are the variables the spell is rendered with besides the
	// scope, in file order; each value is a template.
	Input         []Input  `json:"input,omitempty"`
	Adapter       string   `json:"adapter"`       // DefaultAgentAdapter when not written
	ExecutionMode string   `json:"executionMode"` // DefaultAgentMode when not written
	ExtraArgs     []string `json:"extraArgs,omitempty"`
	OnFail        string   `json:"on_fail"` // continue | block
	// MCP are the step's own MCP servers, added to the grimoire's.
	MCP []MCPServer `json:"mcp,omitempty"`
	// Budget limits what one run of the step's agent may spend; the
	// grimoire's and the run's budgets apply too.
	Budget *budget.Limit `json:"budget,omitempty"`
}

// InlineSpell is true when Spell is the text of the spell rather than a name.
func (a *AgentStep) InlineSpell() bool {
	return strings.ContainsAny(a.Spell, "\n\r")
}

// InputMap is Input as a map, for a template's scope.
func (a *AgentStep) InputMap() map[string]string {
	if len(a.Input) == 0 {
		return nil
	}
	m := make(map[string]string, len(a.Input))
	for _, in := range a.Input {
		m[in.Name] = in.Value
	}
	return m
}

// Input is one entry of an agent step's input.
type Input struct {
	Name  string `json:"name"`
	Value string `json:"value"` // a template
	Pos   Pos    `json:"-"`     // of the value
}

// ScriptStep runs one shell command.
type ScriptStep struct {
	// Command is a template; the values put into it are shell-escaped.
	Command   string `json:"command"`
	OnFail    string `json:"on_fail"`              // continue | block
	OnSuccess string `json:"on_success,omitempty"` // "" | exit_loop
}

// LoopStep runs its steps in order, again and again, until a step exits the
// loop or MaxIterations have run.
type LoopStep struct {
	Steps           []Step `json:"steps"`
	MaxIterations   int    `json:"max_iterations"`    // DefaultMaxIterations when not written
	OnMaxIterations string `json:"on_max_iterations"` // block | exit | continue
}

// MergeStep merges the grimoire's worktree back. RequireReview is true when
// not written (the loader sets it; a MergeStep built in code must too).
type MergeStep struct {
	RequireReview bool `json:"require_review"`
	// AllowEmpty lets a merge with no commit to bring (the branch has
	// nothing the base lacks) end done, "nothing to merge"; without it
	// such a merge blocks the grimoire (nothing_to_merge) and the bead is
	// not closed for work that never happened.
	AllowEmpty bool `json:"allow_empty,omitempty"`
	// Gate is a shell command (sh -c) that checks the exact merged result
	// before the base branch moves: it runs in a temporary worktree at the
	// merge commit; a non-zero exit blocks the bead and the base keeps
	// what it had. "" none. gate: true (GateDefault) is the project's
	// default gate (config.yaml merge.gate), which Normalize puts here;
	// gate: false (NoGate) is none, whatever the default.
	Gate        string `json:"gate,omitempty"`
	GateDefault bool   `json:"gate_default,omitempty"`
	NoGate      bool   `json:"no_gate,omitempty"`
	// GateTimeout bounds one run of the gate (DefaultGateTimeout when a
	// gate is set and none is written).
	GateTimeout Duration `json:"gate_timeout,omitempty"`
	// OnConflict, when set, has an agent resolve a conflict between the
	// branch and its base (nil: the merge blocks, merge_conflict).
	OnConflict *OnConflict `json:"on_conflict,omitempty"`
}

// OnConflict is a merge step's on_conflict: resolve, or its long form
// {resolve: {adapter: NAME, spell: NAME}}. An empty Adapter is the
// grimoire's own (its agent steps'), an empty Spell the built-in
// ResolveSpell.
type OnConflict struct {
	Resolve bool   `json:"resolve"`
	Adapter string `json:"adapter,omitempty"`
	Spell   string `json:"spell,omitempty"`
}

// OnConflictResolve is the one value on_conflict takes.
const OnConflictResolve = "resolve"

// ResolveSpell is the built-in spell of a conflict's resolution.
const ResolveSpell = "resolve-conflicts"

// DefaultGateTimeout bounds a gate's run when its merge step does not.
const DefaultGateTimeout = Duration(30 * time.Minute)

// configFile is the project's settings file (core/beads.ConfigFile),
// where the default gate is set.
const configFile = ".vibeteam/config.yaml"

// Task is one agent process.
// ShellAdapter is the built-in adapter that runs a task's prompt as a shell
// command line (sh -c PROMPT).
const ShellAdapter = "shell"

// PromptIsCommand reports whether the task's prompt is a shell command line:
// its values are then quoted for where they land, as a script step's.
func (t Task) PromptIsCommand() bool { return t.Adapter == ShellAdapter }

// RenderPrompt renders the prompt of a stage workflow's task with the run's
// variables and goal: a command line (PromptIsCommand) with each value
// quoted, any other prompt as text. Run and preview both call it, so that
// preview shows what run will start.
func (t Task) RenderPrompt(vars map[string]string, goal string) (string, error) {
	if t.PromptIsCommand() {
		return render.CommandPrompt(t.ID, t.Prompt, vars, goal)
	}
	return render.Prompt(t.ID, t.Prompt, vars, goal)
}

type Task struct {
	ID            string            `json:"id"`
	Adapter       string            `json:"adapter"`
	ExecutionMode string            `json:"executionMode"` // always normalised: interactive | headless
	Prompt        string            `json:"prompt,omitempty"`
	ExtraArgs     []string          `json:"extraArgs,omitempty"`
	Cwd           string            `json:"cwd,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Name          string            `json:"name,omitempty"`
	PendingInputs []string          `json:"pendingInputs,omitempty"`
	KeepAlive     bool              `json:"keepAlive,omitempty"`
	Timeout       Duration          `json:"timeout,omitempty"`
	// InactivityTimeout fails the task after this long without output; it
	// overrides the adapter's.
	InactivityTimeout Duration `json:"inactivityTimeout,omitempty"`
	// MCP are the task's own MCP servers, added to the workflow's.
	MCP []MCPServer `json:"mcp,omitempty"`
	// Sandbox is the task's own sandbox: block, over the workflow's.
	Sandbox *sandbox.Config `json:"sandbox,omitempty"`
	Pos     Pos             `json:"-"`
}

// DisplayName is the task's name, defaulting to its id.
func (t Task) DisplayName() string {
	if t.Name != "" {
		return t.Name
	}
	return t.ID
}

// AllSteps yields every step in file order, the steps of a loop right after
// the loop itself.
func (d *Definition) AllSteps() iter.Seq[*Step] {
	return func(yield func(*Step) bool) { allSteps(d.Steps, yield) }
}

func allSteps(steps []Step, yield func(*Step) bool) bool {
	for i := range steps {
		s := &steps[i]
		if !yield(s) {
			return false
		}
		if s.Loop != nil && !allSteps(s.Loop.Steps, yield) {
			return false
		}
	}
	return true
}

// FindStep returns the step named name, nested steps included, or nil.
func (d *Definition) FindStep(name string) *Step {
	for s := range d.AllSteps() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Stages returns the top-level steps of type stage, in order.
func (d *Definition) Stages() []Step {
	var out []Step
	for _, s := range d.Steps {
		if s.Type == StepStage {
			out = append(out, s)
		}
	}
	return out
}

// Duration is a time.Duration written as "90s", "10m", "1h30m" in files and
// in session JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return err
		}
		*d = Duration(time.Duration(n * float64(time.Second)))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
