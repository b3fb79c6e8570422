package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core/workflow"
)

func validateCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:      "validate",
		Usage:     "check workflow files without running them; every problem is reported as file:line:col",
		ArgsUsage: "FILE|NAME...",
		Flags: []ucli.Flag{
			baseDirFlag,
			&ucli.BoolFlag{Name: "headless", Usage: "validate as if run with --headless (every task needs a prompt)"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return exitf(ExitUsage, "validate needs at least one workflow file")
			}
			base, err := baseDir(c)
			if err != nil {
				return err
			}
			reg, err := loadRegistry(base)
			if err != nil {
				return err
			}
			bad := 0
			for _, arg := range c.Args().Slice() {
				def, err := loadDefinition(arg, base, workflow.LoadOptions{Adapters: reg, ForceHeadless: c.Bool("headless")})
				if err != nil {
					bad++
					fmt.Fprintln(streams.Err, err)
					continue
				}
				n := 0
				for _, st := range def.Stages() {
					n += len(st.Tasks)
				}
				fmt.Fprintf(streams.Out, "%s: ok (%d stages, %d tasks)\n", def.Source, len(def.Stages()), n)
			}
			if bad > 0 {
				return exitf(ExitUsage, "%d of %d file(s) invalid", bad, c.NArg())
			}
			return nil
		},
	}
}
