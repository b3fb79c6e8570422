package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/ui"
)

// readyBead is one line of `vibeteam ready`.
type readyBead struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Type     string `json:"issue_type"`
	Priority any    `json:"priority"`
	Grimoire string `json:"grimoire"`
	Rule     string `json:"rule"` // why that grimoire
	shown    string // the priority as the table shows it
}

func readyCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:  "ready",
		Usage: "list the beads ready to work on (bd ready), each with the grimoire vibeteam run --bead would use",
		Description: "To work on them all, N at once, each in its own worktree, picking up the beads their blockers'\n" +
			"closing makes ready:\n\n" +
			"   vibeteam run --ready --jobs 4",
		Flags: []ucli.Flag{cmdutil.BaseDirFlag, &ucli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
		Action: func(c *ucli.Context) error {
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			client, err := beads.NewClient(base)
			if err != nil {
				return exitf(ExitUsage, "ready asks bd which beads are ready: %v", err)
			}
			// What bd says on stderr (a cut list, a notice) reaches the user.
			client.Notice = func(l string) { fmt.Fprintf(streams.Err, "bd: %s\n", safe(l)) }
			client.Warn = func(w string) { fmt.Fprintf(streams.Err, "warning: %s\n", safe(w)) }
			cfg, err := beads.LoadConfig(base)
			if err != nil {
				return exitf(ExitUsage, "%v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), bdTimeout)
			defer cancel()
			list, err := client.Ready(ctx)
			if err != nil {
				return exitf(ExitFailed, "%v", err)
			}
			rows := make([]readyBead, 0, len(list))
			for _, b := range list {
				if b.Type() == "epic" {
					// bd ready lists epics; an epic is worked on through
					// its children, or named explicitly (run --bead).
					continue
				}
				name, rule := beads.Select(b, cfg)
				rows = append(rows, readyBead{ID: b.ID(), Title: b.Title(), Type: b.Type(), Priority: b["priority"], Grimoire: name, Rule: rule, shown: b.Priority()})
			}
			if c.Bool("json") {
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(streams.Err, "no bead is ready")
				return nil
			}
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTYPE\tPRIORITY\tGRIMOIRE\tTITLE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", safe(r.ID), safe(r.Type), safe(r.shown), safe(r.Grimoire), ui.Fit(safe(r.Title), 60))
			}
			return tw.Flush()
		},
	}
}
