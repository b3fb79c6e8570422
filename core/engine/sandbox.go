package engine

import (
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/taskrun"
)

// sandboxed gives spec the run's sandbox (Options.Sandbox) unless it has
// one already: every process the run starts (a task's, a script step's, a
// merge gate's) goes through liveProcesses, which calls this, and a task's
// through taskrun, which calls it before its driver starts the process.
func sandboxed(policy *sandbox.Policy, spec *runner.Spec, keep []string, over *sandbox.Config) error {
	return taskrun.Sandboxed(policy, "", spec, keep, over)
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
