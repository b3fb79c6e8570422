package adapters

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// instance is one task's adapter. It shares the immutable definition with
// other instances of its type and hands out copies of everything mutable,
// so parallel tasks can never see each other's changes.
type instance struct {
	def         *definition
	name        string
	cwd         string
	env         map[string]string // the file's env with Options.Env over it
	taskEnv     map[string]string // Options.Env: over modes.acp.env too
	autoApprove bool
	sandboxed   bool
	cont        *Continuation
	mcp         []MCPServer
}

func newInstance(def *definition, opts Options) *instance {
	env := make(map[string]string, len(def.env)+len(opts.Env))
	for k, v := range def.env {
		env[k] = v
	}
	// The task knows its own needs better than the adapter's defaults.
	for k, v := range opts.Env {
		env[k] = v
	}
	name := opts.Name
	if name == "" {
		name = def.name
	}
	return &instance{def: def, name: name, cwd: opts.Cwd, env: env, taskEnv: opts.Env, autoApprove: opts.AutoApprove, sandboxed: opts.Sandboxed, cont: opts.Continue, mcp: opts.MCP}
}

func (a *instance) Type() string { return a.def.name }
func (a *instance) Name() string { return a.name }

func (a *instance) LaunchConfig(mode Mode, prompt string, extraArgs []string) (LaunchConfig, error) {
	if mode == ACP {
		return a.acpLaunch(prompt, extraArgs)
	}
	if mode != Interactive && mode != Headless {
		return LaunchConfig{}, fmt.Errorf("adapter %s: unknown mode %q (want interactive, headless or acp)", a.def.name, mode)
	}
	m, ok := a.def.modes[mode]
	if !ok {
		return LaunchConfig{}, fmt.Errorf("adapter %s has no %s mode", a.def.name, mode)
	}
	var inject []string
	var injectEnv map[string]string
	if a.autoApprove && a.def.policy != nil {
		inject = a.def.policy.InjectArgs
		if a.sandboxed && len(a.def.policy.SandboxedArgs) > 0 {
			inject, injectEnv = a.def.policy.SandboxedArgs, a.def.policy.SandboxedEnv
		}
	}
	args := make([]string, 0, len(m.args)+len(extraArgs)+len(inject)+2)
	args = append(args, m.args...)
	args = append(args, extraArgs...)
	args = append(args, inject...)
	var mcp mcpLaunch
	if len(a.mcp) > 0 {
		var err error
		if mcp, err = mcpConfig(a.def.mcp, a.mcp, a.autoApprove); err != nil {
			return LaunchConfig{}, fmt.Errorf("adapter %s %v", a.def.name, err)
		}
		args = append(args, mcp.args...)
	}
	if a.cont != nil {
		more, err := a.continuation(mode, m)
		if err != nil {
			return LaunchConfig{}, err
		}
		args = append(args, more...)
	}
	// The prompt goes last: after a separator every element is
	// positional, and a variadic option anywhere before it (claude's
	// --allowedTools) cannot take it as one of its values.
	promptArgs, stdin, err := a.promptArgs(mode, m.prompt, prompt)
	if err != nil {
		return LaunchConfig{}, err
	}
	args = append(args, promptArgs...)
	var env map[string]string
	if len(a.env)+len(mcp.env)+len(injectEnv) > 0 {
		env = make(map[string]string, len(a.env)+len(mcp.env)+len(injectEnv))
		for k, v := range a.env {
			env[k] = v
		}
		for k, v := range mcp.env {
			env[k] = v
		}
		for k, v := range injectEnv {
			env[k] = v
		}
	}
	return LaunchConfig{
		Command: a.def.command,
		Args:    args,
		Cwd:     a.cwd,
		Env:     env,
		Cols:    a.def.cols,
		Rows:    a.def.rows,
		UsePTY:  mode == Interactive || m.usePTY,
		Output:  m.output,
		Files:   mcp.files,
		Stdin:   stdin,
	}, nil
}

// promptArgs is how the prompt reaches the agent in mode, as p says: the
// arguments that carry it, or stdin.
func (a *instance) promptArgs(mode Mode, p promptSpec, prompt string) (args []string, stdin string, err error) {
	if prompt == "" {
		return nil, "", nil
	}
	if p.position == PromptNone {
		return nil, "", fmt.Errorf("adapter %s does not take a prompt in mode %s", a.def.name, mode)
	}
	long := len(prompt) > MaxArgPrompt
	switch {
	case p.position == PromptStdin || long && p.longOnStdin:
		return nil, prompt, nil
	case long:
		return nil, "", fmt.Errorf("the prompt is %d KiB, longer than one argument may be (%d KiB), and adapter %s passes it as an argument in mode %s: if %s reads its prompt from stdin, set modes.%s.prompt.longOnStdin: true (or position: stdin) in its adapter file; or shorten the prompt (a spell can tell the agent to read a file)",
			len(prompt)>>10, MaxArgPrompt>>10, a.def.name, mode, a.def.command, mode)
	}
	if strings.HasPrefix(prompt, "-") && !p.optionSafe() && !p.allowLeadingDash {
		return nil, "", leadingDashError(a.def, mode, p, prompt)
	}
	switch {
	case p.position == PromptArg && p.separator != "":
		return []string{p.separator, prompt}, "", nil
	case p.position == PromptArg:
		return []string{prompt}, "", nil
	case p.form == PromptFormEquals:
		return []string{p.flag + "=" + prompt}, "", nil
	}
	return []string{p.flag, prompt}, "", nil
}

// leadingDashError explains why a prompt was refused and how the adapter
// file can pass it safely.
func leadingDashError(def *definition, mode Mode, p promptSpec, prompt string) error {
	shown := excerpt.Runes(prompt, 40, "…")
	key := "modes." + string(mode) + ".prompt"
	var how, fix string
	if p.position == PromptArg {
		how = "as a bare argument"
		fix = fmt.Sprintf(`set %s.separator: "--" if %s ends its options at "--"`, key, def.command)
	} else {
		how = fmt.Sprintf("as `%s PROMPT`", p.flag)
		fix = fmt.Sprintf("set %s.form: equals if %s accepts `%s=PROMPT`", key, def.command, p.flag)
	}
	return fmt.Errorf("adapter %s: the prompt %q starts with \"-\" and could be parsed as an option (%s mode passes it %s); in the adapter file, %s, or allowLeadingDash: true if it reads such a value as text",
		def.name, shown, mode, how, fix)
}

func (a *instance) States() []State { return slices.Clone(a.def.states) }

func (a *instance) AutoPolicy() *AutoPolicy {
	if a.def.policy == nil {
		return nil
	}
	// Compiled regexps are safe to share; the slices are not.
	return &AutoPolicy{
		InjectArgs: slices.Clone(a.def.policy.InjectArgs),
		Handlers:   slices.Clone(a.def.policy.Handlers),
	}
}

func (a *instance) QuietPeriod() time.Duration       { return a.def.quietPeriod }
func (a *instance) InactivityTimeout() time.Duration { return a.def.inactivityTimeout }
func (a *instance) StuckAfter() time.Duration        { return a.def.stuckAfter }
func (a *instance) AnswerSettle() time.Duration      { return a.def.answerSettle }

// continuation is the mode's allow args (when tools were allowed) and
// resume args, with {tools} and {session} filled in.
func (a *instance) continuation(mode Mode, m modeSpec) ([]string, error) {
	if a.cont.Fresh && len(a.cont.Allow) == 0 {
		return nil, nil
	}
	if len(m.resume) == 0 && !a.cont.Fresh {
		return nil, fmt.Errorf("adapter %s cannot continue an agent's session in mode %s (its file has no modes.%s.resume)", a.def.name, mode, mode)
	}
	if a.cont.Session == "" && !a.cont.Fresh {
		return nil, fmt.Errorf("adapter %s: no agent session to continue (the agent did not report its session id)", a.def.name)
	}
	var out []string
	if len(a.cont.Allow) > 0 {
		if len(m.allow) == 0 {
			return nil, fmt.Errorf("adapter %s cannot allow tools in mode %s (its file has no modes.%s.allow)", a.def.name, mode, mode)
		}
		tools := strings.Join(a.cont.Allow, " ")
		for _, arg := range m.allow {
			out = append(out, strings.ReplaceAll(arg, "{tools}", tools))
		}
	}
	if a.cont.Fresh {
		return out, nil
	}
	for _, arg := range m.resume {
		out = append(out, strings.ReplaceAll(arg, "{session}", a.cont.Session))
	}
	return out, nil
}

// acpLaunch is the ACP agent's command (modes.acp.command, else the
// adapter's), its args then extraArgs, its env (the adapter's, then
// modes.acp.env, then the task's), and the session's set-up. The prompt
// goes in session/prompt; MCP servers in session/new.
func (a *instance) acpLaunch(prompt string, extraArgs []string) (LaunchConfig, error) {
	spec := a.def.acp
	if spec == nil {
		return LaunchConfig{}, fmt.Errorf("adapter %s has no acp mode (its file has no modes.acp)", a.def.name)
	}
	cmd := spec.command
	if cmd == "" {
		cmd = a.def.command
	}
	env := make(map[string]string, len(a.env)+len(spec.env))
	for k, v := range a.env {
		env[k] = v
	}
	for k, v := range spec.env {
		if name, ok := strings.CutPrefix(v, "{path:"); ok {
			// The user's own CLI, for an ACP adapter that would run
			// its bundled one; left unset when it is not installed.
			path, err := exec.LookPath(strings.TrimSuffix(name, "}"))
			if err != nil {
				continue
			}
			v = path
		}
		env[k] = v
	}
	for k, v := range a.taskEnv {
		env[k] = v
	}
	mode := spec.sessionMode
	if a.autoApprove && spec.autoApproveMode != "" {
		mode = spec.autoApproveMode
	}
	launch := &ACPLaunch{Prompt: prompt, SessionMode: mode, AutoApprove: a.autoApprove, MCP: slices.Clone(a.mcp)}
	if a.cont != nil {
		if a.cont.Session == "" && !a.cont.Fresh {
			return LaunchConfig{}, fmt.Errorf("adapter %s: no agent session to continue (the agent did not report its session id)", a.def.name)
		}
		launch.Allow = slices.Clone(a.cont.Allow)
		if !a.cont.Fresh {
			launch.Load = a.cont.Session
		}
	}
	args := make([]string, 0, len(spec.args)+len(extraArgs))
	args = append(append(args, spec.args...), extraArgs...)
	if len(env) == 0 {
		env = nil
	}
	return LaunchConfig{Command: cmd, Args: args, Cwd: a.cwd, Env: env, Cols: a.def.cols, Rows: a.def.rows, Output: OutputText, ACP: launch}, nil
}
