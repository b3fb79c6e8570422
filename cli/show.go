package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
)

func showCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:      "show",
		Usage:     "show one session: tasks, statuses, exit codes, last output lines, log locations",
		ArgsUsage: "ID",
		Flags:     []ucli.Flag{baseDirFlag, &ucli.BoolFlag{Name: "json", Usage: "print the session file's JSON"}},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return exitf(ExitUsage, "show needs a session id (see vibeteam sessions)")
			}
			base, err := baseDir(c)
			if err != nil {
				return err
			}
			mgr := state.NewManager(base)
			id, err := resolveSession(mgr, c.Args().First())
			if err != nil {
				return err
			}
			s, err := mgr.Load(id)
			if err != nil {
				return sessionLoadError(err)
			}
			if err := s.Check(); err != nil && !c.Bool("json") {
				return exitf(ExitUsage, "session %s is damaged (%s): %v", s.ID, mgr.SessionPath(s.ID), err)
			}
			if c.Bool("json") {
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			out := streams.Out
			sum := summarize(mgr, s)
			status := string(s.Status)
			if sum.Running {
				status += " (running)"
			}
			// Everything below comes from the session file, which holds
			// text from the workflow and the agents: it goes through safe.
			fmt.Fprintf(out, "session   %s\nworkflow  %s\n", safe(s.ID), safe(s.Workflow))
			if s.Goal != "" {
				fmt.Fprintf(out, "goal      %s\n", safe(s.Goal))
			}
			fmt.Fprintf(out, "status    %s\nstage     %d/%d\nstarted   %s\nupdated   %s\n", status, min(sum.Stage+1, sum.Stages), sum.Stages,
				s.StartTime.Local().Format(time.DateTime), s.UpdatedAt.Local().Format(time.DateTime))
			if s.Error != "" {
				fmt.Fprintf(out, "error     %s\n", safe(s.Error))
			}
			fmt.Fprintf(out, "events    %s\n", safe(mgr.EventLogPath(s.ID)))
			for i, st := range s.WorkflowDefinition.Stages() {
				marker := " "
				if i == s.CurrentStageIndex {
					marker = ">"
				}
				fmt.Fprintf(out, "\n%s stage %d %s\n", marker, i+1, safe(st.ID))
				for _, t := range st.Tasks {
					rec := s.Tasks[t.ID]
					line := fmt.Sprintf("    %s %s %s", pad(taskLabel(t.DisplayName(), t.ID), 20), pad(safe(t.Adapter), 10), pad(safe(string(s.TaskStatus[t.ID])), 17))
					if rec != nil {
						if rec.ExitCode != nil {
							line += fmt.Sprintf(" exit %d", *rec.ExitCode)
						}
						if rec.Reason != "" && rec.Reason != "exit" {
							line += " (" + safe(rec.Reason) + ")"
						}
						if rec.StartedAt != nil && rec.EndedAt != nil {
							line += " " + rec.EndedAt.Sub(*rec.StartedAt).Round(10*time.Millisecond).String()
						}
					}
					fmt.Fprintln(out, strings.TrimRight(line, " "))
					if rec == nil {
						continue
					}
					if rec.Error != "" {
						fmt.Fprintf(out, "      error: %s\n", safe(rec.Error))
					}
					tail := rec.OutputTail
					if len(tail) > 5 {
						tail = tail[len(tail)-5:]
					}
					if screen := lastScreen(rec); screen != "" {
						// A TUI's log is redraws; its last screen says more.
						tail = strings.Split(screen, "\n")
						fmt.Fprintln(out, "      last screen:")
					}
					for _, l := range tail {
						fmt.Fprintf(out, "      | %s\n", safeLine(l))
					}
					if rec.LogPath != "" {
						fmt.Fprintf(out, "      log: %s\n", safe(rec.LogPath))
					}
				}
			}
			return nil
		},
	}
}

// lastScreen renders the end of an interactive task's raw log: its last
// screen, or "" for headless tasks.
func lastScreen(rec *state.TaskRecord) string {
	if rec.Mode != string(adapters.Interactive) || rec.LogPath == "" {
		return ""
	}
	f, err := os.Open(strings.TrimSuffix(rec.LogPath, ".log") + ".raw.log")
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 256 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(-window, io.SeekEnd)
	}
	raw, err := io.ReadAll(f)
	if err != nil || len(raw) == 0 {
		return ""
	}
	return engine.Excerpt(runner.RenderScreen(raw, runner.DefaultCols, runner.DefaultRows), 8)
}
