package cli

import (
	"fmt"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/workflow"
)

func sandboxFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "sandbox", Usage: "run every agent, script step and merge gate in a sandbox (bubblewrap): only the work dir writable, secrets hidden, no network but the allowed hosts (on by default for bead runs and --auto-approve)"},
		&ucli.BoolFlag{Name: "no-sandbox", Usage: "run unsandboxed, even where the sandbox is on by default (bead runs, --auto-approve)"},
	}
}

// sandboxFor decides whether a run is sandboxed, and how: --sandbox or
// --no-sandbox; else VIBETEAM_SANDBOX=on|off; else a sandbox: block (the
// definition's or config.yaml's) or the sandbox the session recorded
// (resume) asks for it; else it is on by default for bead runs and
// --auto-approve, where bubblewrap is there. Asked for without bubblewrap
// is exit 2 with the install command; on by default without it, a
// warning, and the run goes on unsandboxed. nil: unsandboxed.
func sandboxFor(c *ucli.Context, warn func(string), base string, def *workflow.Definition, beadRun bool, recorded *sandbox.Config) (*sandbox.Config, error) {
	project, err := beads.LoadConfig(base)
	if err != nil {
		return nil, exitf(ExitUsage, "%v", err)
	}
	cfg := &sandbox.Config{}
	switch {
	case recorded != nil:
		cfg = recorded
	case project.Sandbox != nil:
		cfg = project.Sandbox
	}
	var asked string // who asked for the sandbox; "" for the default
	switch env := strings.ToLower(strings.TrimSpace(os.Getenv(cmdutil.SandboxEnv))); {
	case c.Bool("sandbox") && c.Bool("no-sandbox"):
		return nil, exitf(ExitUsage, "--sandbox and --no-sandbox: one or the other")
	case c.Bool("no-sandbox"):
		if c.Bool("auto-approve") {
			warn("--auto-approve with --no-sandbox: the agents run unsandboxed, with the tools their adapters pre-allow (claude: Bash, Edit, Write…) on your whole machine")
		}
		return nil, nil
	case c.Bool("sandbox"):
		asked = "--sandbox"
	case env == "off" || env == "0" || env == "false":
		return nil, nil
	case env == "on" || env == "1" || env == "true":
		asked = cmdutil.SandboxEnv + "=on"
	case env != "":
		return nil, exitf(ExitUsage, "%s=%s: it is on or off", cmdutil.SandboxEnv, os.Getenv(cmdutil.SandboxEnv))
	case def != nil && def.Sandbox != nil:
		asked = "the sandbox: block of " + def.Source
	case project.Sandbox != nil:
		asked = "the sandbox: block of " + beads.ConfigFile
	case recorded != nil:
		asked = "the session, which ran sandboxed,"
	case beadRun || c.Bool("auto-approve"):
	default:
		return nil, nil
	}
	if _, err := sandbox.Find(); err != nil {
		if asked != "" {
			return nil, exitf(ExitUsage, "%s asks for the sandbox, but %v", asked, cmdutil.NoSandboxWhy(err))
		}
		what := "this bead run"
		if !beadRun {
			what = "this --auto-approve run"
		}
		warn(fmt.Sprintf("%s runs UNSANDBOXED: %v; its agents, scripts and gates can read your ~/.ssh, ~/.aws and API keys and write anywhere you can (--no-sandbox silences this)", what, cmdutil.NoSandboxWhy(err)))
		return nil, nil
	}
	return cfg, nil
}

// warnLine writes a warning line to stderr.
func warnLine(streams IO) func(string) {
	return func(w string) { fmt.Fprintln(streams.Err, "warning: "+safe(w)) }
}
