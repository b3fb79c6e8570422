// Command vibeteam runs AI coding agents as a team: one workflow per
// invocation, in the foreground.
package main

import (
	"os"

	"github.com/vibeteam/vibeteam/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, cli.StdIO()))
}
