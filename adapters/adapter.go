// Package adapters holds the adapter contract (the Go form of IAgentAdapter),
// the registry of adapter types, the built-in adapter definitions (embedded
// YAML) and the loader for user adapter files in .vibeteam/adapters.
package adapters

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/handlers"
)

// Mode is a task's execution mode.
type Mode string

const (
	Interactive Mode = "interactive"
	Headless    Mode = "headless"
	// ACP runs the agent over the Agent Client Protocol (JSON-RPC on its
	// stdio): the prompt goes in session/prompt, not in argv.
	ACP Mode = "acp"
)

// Output is what a headless mode prints on stdout: text, or a CLI's
// structured JSON lines, which vibeteam parses (core/agentstream) for the
// agent's messages, tool calls, usage, errors and permission denials.
type Output string

const (
	OutputText             Output = "text"
	OutputClaudeStreamJSON Output = "claude-stream-json" // claude -p --output-format stream-json --verbose
	OutputCodexJSON        Output = "codex-json"         // codex exec --json
	OutputGeminiStreamJSON Output = "gemini-stream-json" // gemini -p --output-format stream-json
	OutputOpencodeJSON     Output = "opencode-json"      // opencode run --format json
)

// Outputs are the output formats an adapter file may name.
var Outputs = []Output{OutputText, OutputClaudeStreamJSON, OutputCodexJSON, OutputGeminiStreamJSON, OutputOpencodeJSON}

// LaunchConfig is everything needed to start one agent process.
type LaunchConfig struct {
	Command string
	Args    []string
	Cwd     string            // the task's cwd as given to the adapter (may be empty)
	Env     map[string]string // merged over vibeteam's own environment by the runner
	Cols    int               // PTY size (interactive or UsePTY)
	Rows    int
	UsePTY  bool   // run in a PTY even in headless mode, without state automation
	Output  Output // headless stdout's format
	// Files are to be written before the start, each one's path in the
	// environment variable it names (a CLI's settings for MCP servers).
	Files []LaunchFile
	// Stdin is the prompt when it goes to the CLI's stdin (position:
	// stdin, or longOnStdin with a long prompt): written first, then
	// stdin is closed once the task's queue is written.
	Stdin string
	// ACP is set in mode acp: what the client tells the agent.
	ACP *ACPLaunch
}

// ACPLaunch is how an ACP agent's session is set up.
type ACPLaunch struct {
	Prompt string
	// SessionMode is the session mode to set ("" leaves the agent's
	// default): the adapter's sessionMode, or with --auto-approve its
	// autoApproveMode.
	SessionMode string
	// AutoApprove: the adapter's policy answers every permission request
	// (by option kind, allow_once, else allow_always).
	AutoApprove bool
	// Load is the agent's session to continue (session/load), and Allow
	// the tools a person allowed in it.
	Load  string
	Allow []string
	// MCP are the task's MCP servers, for session/new.
	MCP []MCPServer
}

// State is one named pattern matched against an interactive task's rendered
// screen. States are tried in declared order; the first match wins.
type State struct {
	Name    string
	Pattern *regexp.Regexp
}

// Handler is one auto-policy rule: when When matches the screen, send Send,
// apply the named standard handler Use (e.g. "pressEnter", "select:1"), or
// choose the menu option labelled Choose (see handlers.Action.Choose).
type Handler struct {
	When   *regexp.Regexp
	Send   string
	Use    string
	Choose string
}

// AutoPolicy is applied with --auto-approve.
type AutoPolicy struct {
	InjectArgs []string
	Handlers   []Handler
	// SandboxedArgs replace InjectArgs when the agent runs inside
	// vibeteam's sandbox (Options.Sandboxed): the CLI's own bypass mode,
	// which the sandbox makes safe; SandboxedEnv is set with them
	// (claude's IS_SANDBOX=1).
	SandboxedArgs []string
	SandboxedEnv  map[string]string
}

// Options construct one adapter instance for one task.
type Options struct {
	Cwd  string
	Env  map[string]string
	Name string // display name; defaults to the task id (callers pass it)
	// Sandboxed: the agent runs inside vibeteam's sandbox; with
	// AutoApprove, AutoPolicy.SandboxedArgs and SandboxedEnv are used
	// instead of InjectArgs where the adapter has them.
	Sandboxed bool
	// AutoApprove (--auto-approve): LaunchConfig puts AutoPolicy.InjectArgs
	// in argv. The adapter places them, not the caller, because they must
	// come before the prompt: after a separator such as "--" they would be
	// read as prompt text.
	AutoApprove bool
	// Continue (a headless run after a denial) continues the agent's own
	// session, with the tools a person allowed: LaunchConfig puts the
	// mode's allow and resume args before the prompt.
	Continue *Continuation
	// MCP are the MCP servers the agent gets; LaunchConfig gives them to
	// the CLI as its file's mcp: format says (an error when it has none).
	MCP []MCPServer
}

// Continuation is an agent session to continue and what to allow in it.
type Continuation struct {
	Session string   // the agent's own session or thread id
	Allow   []string // tools a person allowed (rules as the CLI takes them)
	// Fresh: the session cannot be continued (the agent did not save it):
	// a new one starts, with Allow still given.
	Fresh bool
}

// Adapter is one instance of an adapter type, created per task so parallel
// tasks never share state.
type Adapter interface {
	Type() string // registered type name, e.g. "claude"
	Name() string // instance display name
	// LaunchConfig builds the command for mode: argv = args + extraArgs +
	// AutoPolicy.InjectArgs (with Options.AutoApprove) + the prompt, as
	// `PROMPT`, `SEPARATOR PROMPT`, `FLAG PROMPT` or `FLAG=PROMPT`. It fails
	// rather than pass a prompt that the CLI could parse as an option.
	LaunchConfig(mode Mode, prompt string, extraArgs []string) (LaunchConfig, error)
	States() []State
	AutoPolicy() *AutoPolicy // nil when the adapter has none
	QuietPeriod() time.Duration
	InactivityTimeout() time.Duration // 0: none
	// StuckAfter: an answered question still shown, with no output since
	// its answer for this long, is asked of a person (never answered twice).
	StuckAfter() time.Duration
	// AnswerSettle: a question is answered once it has been shown this
	// long, for TUIs that draw a dialog before they read keys (codex); 0
	// answers it once the screen has been quiet for QuietPeriod.
	AnswerSettle() time.Duration
}

// State names with a meaning to the engine. A state whose name starts with
// "interaction_" (other than StateIdle) is a question the agent is asking:
// the auto policy answers it, or the user is asked. Any other name (such as
// StateWorking) only says what the agent is doing and needs no answer; it
// exists so a busy screen that still shows the idle prompt is not taken for
// idle, since Go regexps have no lookahead to exclude it.
const (
	StateIdle    = "interaction_idle"
	StateWorking = "working"
)

// NeedsAnswer reports whether s is a question for the auto policy or the user.
func (s State) NeedsAnswer() bool {
	return strings.HasPrefix(s.Name, "interaction_") && s.Name != StateIdle
}

// Action returns what h does for ctx, or nil when h.When does not match
// ctx.Screen. The handler named by Use sees ctx with Match set to the text
// When matched.
func (h Handler) Action(ctx handlers.Context) *handlers.Action {
	if h.When == nil {
		return nil
	}
	loc := h.When.FindStringIndex(ctx.Screen)
	if loc == nil {
		return nil
	}
	ctx.Match = ctx.Screen[loc[0]:loc[1]]
	if h.Send != "" {
		return &handlers.Action{Keys: h.Send, Description: fmt.Sprintf("send %q", h.Send)}
	}
	if h.Choose != "" {
		return &handlers.Action{Choose: h.Choose, Description: fmt.Sprintf("choose %q", h.Choose)}
	}
	f, err := handlers.Lookup(h.Use)
	if err != nil {
		// Loaded files are validated; only a Handler built in Go code with
		// a bad Use gets here, and it simply does not apply.
		return nil
	}
	return f(ctx)
}

// Action returns the action of the first handler that applies to ctx, or
// nil when none does (then the user is asked). A nil policy has none.
func (p *AutoPolicy) Action(ctx handlers.Context) *handlers.Action {
	if p == nil {
		return nil
	}
	for _, h := range p.Handlers {
		if a := h.Action(ctx); a != nil {
			return a
		}
	}
	return nil
}
