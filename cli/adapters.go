package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
)

func adaptersCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:  "adapters",
		Usage: "list adapters: built-in and .vibeteam/adapters/*.yaml, whether each command is on PATH, and which files are broken",
		Description: `A broken adapter file (bad YAML, an unknown key, not a regular file) is
listed with STATUS broken and its problems, file:line:col, on stderr; the
exit status is then 1. A broken file fails only the workflows that use its
adapter.`,
		Flags: []ucli.Flag{cmdutil.BaseDirFlag, &ucli.BoolFlag{Name: "json", Usage: "print a JSON array; a broken file has \"broken\": true and its \"problems\""}},
		Action: func(c *ucli.Context) error {
			_, reg, err := cmdutil.BaseAndRegistry(c, nil)
			if err != nil {
				return err
			}
			type row struct {
				Name        string   `json:"name"`
				Source      string   `json:"source"`
				Command     string   `json:"command"`
				OnPath      bool     `json:"onPath"`
				Description string   `json:"description,omitempty"`
				Broken      bool     `json:"broken,omitempty"`
				Problems    []string `json:"problems,omitempty"`
			}
			var rows []row
			for _, i := range reg.Info() {
				rows = append(rows, row{Name: i.Name, Source: i.Source, Command: i.Command, OnPath: i.OnPath, Description: i.Description})
			}
			broken := reg.BrokenFiles()
			for _, b := range broken {
				rows = append(rows, row{Name: b.Name, Source: b.File, Broken: true, Problems: cmdutil.ProblemLines(b.Err)})
			}
			sort.SliceStable(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
			var done error
			if len(broken) > 0 {
				done = exitf(ExitFailed, "%d adapter file(s) broken", len(broken))
			}
			if c.Bool("json") {
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rows); err != nil {
					return err
				}
				return done
			}
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCOMMAND\tSTATUS\tSOURCE")
			for _, r := range rows {
				status, cmd := "not on PATH", r.Command
				switch {
				case r.Broken:
					status, cmd = "broken", "-"
				case r.OnPath:
					status = "ok"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, cmd, status, r.Source)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, r := range rows {
				if r.Broken {
					fmt.Fprintf(streams.Err, "%s is broken:\n  %s\n", r.Source, strings.Join(r.Problems, "\n  "))
				}
			}
			return done
		},
	}
}
