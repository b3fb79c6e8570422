package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"
)

func adaptersCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:  "adapters",
		Usage: "list adapters: built-in and .vibeteam/adapters/*.yaml, and whether each command is on PATH",
		Flags: []ucli.Flag{baseDirFlag, &ucli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
		Action: func(c *ucli.Context) error {
			base, err := baseDir(c)
			if err != nil {
				return err
			}
			reg, err := loadRegistry(base)
			if err != nil {
				return err
			}
			infos := reg.Info()
			if c.Bool("json") {
				type row struct {
					Name        string `json:"name"`
					Source      string `json:"source"`
					Command     string `json:"command"`
					OnPath      bool   `json:"onPath"`
					Description string `json:"description,omitempty"`
				}
				rows := make([]row, 0, len(infos))
				for _, i := range infos {
					rows = append(rows, row{i.Name, i.Source, i.Command, i.OnPath, i.Description})
				}
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCOMMAND\tON PATH\tSOURCE")
			for _, i := range infos {
				on := "no"
				if i.OnPath {
					on = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", i.Name, i.Command, on, i.Source)
			}
			return tw.Flush()
		},
	}
}
