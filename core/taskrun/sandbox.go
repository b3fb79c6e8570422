package taskrun

import (
	"slices"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
)

// Sandboxed gives spec the run's sandbox (policy) unless it has one
// already, with over (a step's or a task's sandbox: block) over the run's,
// keeping the variables keep names; adapter names the agent whose process
// it is ("" for a script or a gate). Every process the run starts (a
// task's, a script step's, a merge gate's) is fenced in so.
func Sandboxed(policy *sandbox.Policy, adapter string, spec *runner.Spec, keep []string, over *sandbox.Config) error {
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
	if len(plan.AgentArgs) > 0 {
		// Options of the agent's own (codex's -c openai_base_url, global
		// options a subcommand takes too), before the subcommand.
		spec.Args = append(slices.Clone(plan.AgentArgs), spec.Args...)
	}
	return nil
}

// authEnv are the variables adapter takes its credentials from: a sandbox
// keeps them for its agent.
func authEnv(policy *sandbox.Policy, reg *adapters.Registry, adapter string) []string {
	if policy == nil || reg == nil {
		return nil
	}
	for _, in := range reg.Info() {
		if in.Name == adapter {
			return in.Auth.Env
		}
	}
	return nil
}
