package engine

import (
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
)

// sandboxed gives spec the run's sandbox (Options.Sandbox) unless it has
// one already: every process the run starts (a task's, a script step's, a
// merge gate's) goes through liveProcesses, which calls this, and a
// terminal task's through startTerminal.
func sandboxed(policy *sandbox.Policy, spec *runner.Spec, keep []string, over *sandbox.Config) error {
	return sandboxedAgent(policy, "", spec, keep, over)
}

// sandboxedAgent is sandboxed for a process of adapter's.
func sandboxedAgent(policy *sandbox.Policy, adapter string, spec *runner.Spec, keep []string, over *sandbox.Config) error {
	if policy == nil || spec.Sandbox != nil {
		return nil
	}
	var step sandbox.Config
	if over != nil {
		step = *over
	}
	plan, err := policy.PlanFor(adapter, spec.Dir, keep, step)
	if err != nil {
		return err
	}
	spec.Sandbox = plan
	return nil
}

// authEnv are the variables adapter takes its credentials from: a sandbox
// keeps them for its agent.
func (o Options) authEnv(adapter string) []string {
	if o.Sandbox == nil || o.Registry == nil {
		return nil
	}
	for _, in := range o.Registry.Info() {
		if in.Name == adapter {
			return in.Auth.Env
		}
	}
	return nil
}

// gatePlan is the sandbox of a merge gate run in dir, the temporary
// worktree of the merged result: writable as a bead's worktree is, the
// merge step's sandbox: block over the run's.
func gatePlan(policy *sandbox.Policy, dir string, over *sandbox.Config) (*sandbox.Plan, error) {
	if policy == nil {
		return nil, nil
	}
	var step sandbox.Config
	if over != nil {
		step = *over
	}
	return policy.In(dir).Plan(dir, nil, step)
}
