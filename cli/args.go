package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
)

// interspersed moves a command's flags in front of its positional arguments,
// so `vibeteam run wf.yaml --auto-approve` works: urfave/cli v2 stops
// parsing flags at the first positional argument.
func interspersed(args []string, app *ucli.App) []string {
	if len(args) < 2 {
		return args
	}
	// Skip global flags to find the command.
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "--" {
		if !strings.Contains(args[i], "=") && cmdutil.TakesValue(app.Flags, args[i]) {
			i++
		}
		i++
	}
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil {
		return args
	}
	var flags, positional []string
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			positional = append(positional, rest[j:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && cmdutil.TakesValue(cmd.Flags, a) && j+1 < len(rest) {
				j++
				flags = append(flags, rest[j])
			}
			continue
		}
		positional = append(positional, a)
	}
	out := append([]string{}, args[:i+1]...)
	out = append(out, flags...)
	return append(out, positional...)
}
