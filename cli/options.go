package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/taskrun"
)

// runOptions are run's and resume's flags as core takes them: read once,
// and the person's choices checked once, before anything is claimed,
// locked or started. The caller adds the variables (--set) and what it
// makes (the bead, its workspace, the sandbox).
func runOptions(c *ucli.Context, base string) (core.RunOptions, error) {
	choices, err := choicesOf(c)
	if err != nil {
		return core.RunOptions{}, err
	}
	return core.RunOptions{
		BaseDir:      base,
		Choices:      choices,
		KeepSessions: c.Int("keep-sessions"),
		MaxSpend:     maxSpend(c),
		SecretVars:   secretVarNames(c),
		Telemetry:    telemetryOf(c),
	}, nil
}

// choicesOf reads the flags that say how the run goes, one value from here
// to each task (taskrun.Choices), and checks them: a usage error (exit 2)
// names the flag.
func choicesOf(c *ucli.Context) (taskrun.Choices, error) {
	wait, err := waitLimitsOf(c)
	if err != nil {
		return taskrun.Choices{}, err
	}
	choices := taskrun.Choices{
		AutoApprove:   c.Bool("auto-approve"),
		ForceHeadless: c.Bool("headless"),
		Grace:         c.Duration("grace"),
		Interaction:   c.String("on-interaction"),
		KeepGoing:     c.Bool("keep-going"),
		Strict:        c.Bool("strict"),
		WaitLimits:    wait,
	}
	if err := choices.Check(); err != nil {
		return taskrun.Choices{}, err
	}
	return choices, nil
}
