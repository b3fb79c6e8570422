// Command vibeteam runs AI coding agents as a team: one workflow per
// invocation, in the foreground.
package main

import (
	"os"

	"github.com/vibeteam/vibeteam/cli"
	"github.com/vibeteam/vibeteam/core/runner"
)

func main() {
	// Daemons that a task leaves behind in a session of their own come
	// back to vibeteam, which stops them (runner.StopStrays).
	_ = runner.BecomeSubreaper()
	os.Exit(cli.Main(os.Args, cli.StdIO()))
}
