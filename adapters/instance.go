package adapters

import (
	"fmt"
	"slices"
	"time"
)

// instance is one task's adapter. It shares the immutable definition with
// other instances of its type and hands out copies of everything mutable,
// so parallel tasks can never see each other's changes.
type instance struct {
	def  *definition
	name string
	cwd  string
	env  map[string]string // the file's env with Options.Env over it
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
	return &instance{def: def, name: name, cwd: opts.Cwd, env: env}
}

func (a *instance) Type() string { return a.def.name }
func (a *instance) Name() string { return a.name }

func (a *instance) LaunchConfig(mode Mode, prompt string, extraArgs []string) (LaunchConfig, error) {
	if mode != Interactive && mode != Headless {
		return LaunchConfig{}, fmt.Errorf("adapter %s: unknown mode %q (want interactive or headless)", a.def.name, mode)
	}
	m, ok := a.def.modes[mode]
	if !ok {
		return LaunchConfig{}, fmt.Errorf("adapter %s has no %s mode", a.def.name, mode)
	}
	args := make([]string, 0, len(m.args)+len(extraArgs)+2)
	args = append(args, m.args...)
	args = append(args, extraArgs...)
	// The prompt goes last so that CLIs whose positional prompt must follow
	// their options (claude -p ... PROMPT) get it there, and so the
	// caller's injectArgs, appended after it, cannot be swallowed by a
	// variadic option in extraArgs taking the prompt as one of its values.
	if prompt != "" {
		switch m.position {
		case PromptArg:
			args = append(args, prompt)
		case PromptFlag:
			args = append(args, m.flag, prompt)
		case PromptNone:
			return LaunchConfig{}, fmt.Errorf("adapter %s does not take a prompt in mode %s", a.def.name, mode)
		}
	}
	var env map[string]string
	if len(a.env) > 0 {
		env = make(map[string]string, len(a.env))
		for k, v := range a.env {
			env[k] = v
		}
	}
	return LaunchConfig{
		Command:    a.def.command,
		Args:       args,
		Cwd:        a.cwd,
		Env:        env,
		Cols:       a.def.cols,
		Rows:       a.def.rows,
		UsePTY:     mode == Interactive || m.usePTY,
		CloseStdin: m.closeStdin,
	}, nil
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
