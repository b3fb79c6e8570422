package showcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/ui"

	ucli "github.com/urfave/cli/v2"

	"strings"

	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// Summary is one row of `vibeteam sessions --json`.
type Summary struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Goal     string `json:"goal"`
	Status   string `json:"status"`
	Stage    int    `json:"stage"`  // current stage index
	Stages   int    `json:"stages"` // number of stages
	// Step is a grimoire's step where it is or stopped (it has no
	// stages), by name; "" for a stage workflow.
	Step      string `json:"step,omitempty"`
	grimoire  bool
	Done      int       `json:"tasksDone"`
	Tasks     int       `json:"tasks"`
	UpdatedAt time.Time `json:"updatedAt"`
	Running   bool      `json:"running"`
	// A grimoire's bead and why it is blocked, if it is.
	Bead          string       `json:"bead,omitempty"`
	Worktree      string       `json:"worktree,omitempty"`
	BlockedReason vocab.Reason `json:"blockedReason,omitempty"`
	// Next is the command that moves the session on, for one that waits
	// for a person (empty when it runs or is over).
	Next string `json:"next,omitempty"`
	// Damaged says why the session file, or its journal, cannot be read
	// whole; its status is then "damaged".
	Damaged string `json:"damaged,omitempty"`
}

// damagedSummary is the row of a session file that cannot be read.
func damagedSummary(d *state.DamagedError) Summary {
	sum := Summary{ID: d.ID, Status: statusDamaged, Damaged: d.Reason, grimoire: true} // no stage to show
	if fi, err := os.Stat(d.Path); err == nil {
		sum.UpdatedAt = fi.ModTime()
	}
	return sum
}

// statusDamaged is the status sessions and show give a session whose file
// or journal cannot be read whole.
const statusDamaged = "damaged"

func summarize(mgr *state.Manager, s *state.Session) Summary {
	sum := Summary{ID: s.ID, Workflow: s.Workflow, Goal: s.Goal, Status: string(s.Status), Stage: s.CurrentStageIndex, UpdatedAt: s.UpdatedAt, Running: mgr.Running(s.ID)}
	if s.WorkflowDefinition != nil {
		sum.Stages = len(s.WorkflowDefinition.Stages())
	}
	if id, _ := s.Bead["id"].(string); id != "" {
		title, _ := s.Bead["title"].(string)
		sum.Goal, sum.Bead = "bead "+id+": "+title, id
	}
	sum.BlockedReason, sum.Worktree = s.BlockedReason, s.Worktree
	sum.Next = NextCommand(s, sum.Running)
	if b := s.Broken; b != nil {
		// Never "waiting for you": resume refuses it as it is.
		sum.Status, sum.Next = statusDamaged, ""
		sum.Damaged = fmt.Sprintf("journal line %d: %s; %s not applied (vibeteam show %s)", b.Line, b.Why, b.LostText(), s.ID)
	}
	if bl := s.Backlog; bl != nil {
		// A backlog's progress is its beads.
		sum.grimoire, sum.Tasks = true, len(bl.Beads)
		for _, b := range bl.Beads {
			if b.Status == string(state.StatusCompleted) {
				sum.Done++
			}
		}
		sum.Goal = fmt.Sprintf("%d bead(s), %d at once", len(bl.Beads), bl.Jobs)
		if s.Status == state.StatusFailed && s.Error != "" {
			// Why it failed (bd not set up, ...); with no bead taken there
			// is nothing for a resume to continue.
			sum.Goal = "failed: " + strings.TrimSpace(excerpt.FirstLine(s.Error))
			if len(bl.Beads) == 0 {
				sum.Next = ""
			}
		}
		return sum
	}
	if s.WorkflowDefinition != nil && s.WorkflowDefinition.Kind == workflow.KindGrimoire {
		sum.grimoire = true
		if r := s.Runs[s.Cursor]; r != nil {
			sum.Step = r.Name
		} else if s.BlockedStep != "" {
			sum.Step = s.BlockedStep
		}
		// A grimoire's progress is its step runs (loops aside).
		for _, r := range s.Runs {
			if r.Type == workflow.StepLoop {
				continue
			}
			sum.Tasks++
			if r.Status == vocab.StepDone {
				sum.Done++
			}
		}
		return sum
	}
	for t := range s.AllTasks() {
		sum.Tasks++
		if t.Status == state.TaskDone {
			sum.Done++
		}
	}
	return sum
}

// SessionsOptions are what `vibeteam sessions` is asked.
type SessionsOptions struct {
	IO   cmdutil.IO
	Base string // the project's base dir
	JSON bool   // --json
}

// NewCmdSessions is the `sessions` command. Its action gathers the options
// and hands them to runF (nil: RunSessions).
func NewCmdSessions(streams cmdutil.IO, runF func(*SessionsOptions) error) *ucli.Command {
	if runF == nil {
		runF = RunSessions
	}
	return &ucli.Command{
		Name:  "sessions",
		Usage: "list sessions, newest first (running ones are marked)",
		Flags: []ucli.Flag{cmdutil.BaseDirFlag, &ucli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
		Action: func(c *ucli.Context) error {
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			return runF(&SessionsOptions{IO: streams, Base: base, JSON: c.Bool("json")})
		},
	}
}

// RunSessions lists the sessions under opts.Base, and what waits for a
// person.
func RunSessions(opts *SessionsOptions) error {
	mgr := state.NewManager(opts.Base)
	list, damaged, err := mgr.Scan()
	if err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
	}
	rows := make([]Summary, 0, len(list)+len(damaged))
	for _, s := range list {
		rows = append(rows, summarize(mgr, s))
	}
	for _, d := range damaged {
		rows = append(rows, damagedSummary(d))
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(opts.IO.Err, "no sessions under %s\n", ui.Safe(mgr.Root()))
		return nil
	}
	if err := sessionTable(opts.IO.Out, rows); err != nil {
		return err
	}
	return followUps(opts.IO.Out, rows)
}

// sessionTable is a line per session.
func sessionTable(out io.Writer, rows []Summary) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKFLOW\tSTATUS\tSTAGE\tTASKS/STEPS\tUPDATED\tGOAL")
	for _, r := range rows {
		status := ui.Safe(r.Status)
		if r.BlockedReason != "" && r.Status == string(state.StatusBlocked) {
			status += " (" + ui.Safe(r.BlockedReason) + ")"
		}
		switch {
		case r.Running && r.Status != string(vocab.SessionRunning):
			status += " (running)"
		case !r.Running && r.Status == string(vocab.SessionRunning):
			status += " (no live process)"
		}
		stage := fmt.Sprintf("%d/%d", min(r.Stage+1, r.Stages), r.Stages)
		if r.grimoire {
			// A grimoire has steps, not stages: the one it is at.
			stage = "-"
			if r.Step != "" {
				stage = "step " + ui.Fit(ui.Safe(r.Step), 24)
			}
		}
		// Session files hold workflow text: safe before printing.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", ui.Safe(r.ID), ui.Safe(r.Workflow), status, stage, r.Done, r.Tasks, r.UpdatedAt.Local().Format("2006-01-02 15:04:05"), ui.Fit(ui.Safe(r.Goal), 50))
	}
	return tw.Flush()
}

// followUps are the damaged sessions, and those waiting for a person with
// the command that moves each on.
func followUps(out io.Writer, rows []Summary) error {
	var waiting, broken []Summary
	for _, r := range rows {
		if r.Next != "" {
			waiting = append(waiting, r)
		}
		if r.Damaged != "" {
			broken = append(broken, r)
		}
	}
	if len(broken) > 0 {
		fmt.Fprintln(out, "\ndamaged:")
		for _, r := range broken {
			fmt.Fprintf(out, "  %s\t%s\n", ui.Safe(r.ID), ui.Safe(r.Damaged))
		}
	}
	if len(waiting) > 0 {
		fmt.Fprintln(out, "\nwaiting for you:")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, r := range waiting {
			where := ""
			if r.Worktree != "" {
				where = "worktree " + ui.Safe(r.Worktree)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", ui.Safe(r.ID), ui.Safe(r.Next), where)
		}
		return tw.Flush()
	}
	return nil
}

// NextCommand is the command a person types to move a session on: review
// a waiting merge, retry after a conflict is resolved, or resume. Empty
// for a session that runs, completed or was cancelled.
func NextCommand(s *state.Session, running bool) string {
	if running {
		return ""
	}
	switch s.Status {
	case state.StatusCompleted, state.StatusCancelled:
		return ""
	case state.StatusPendingMerge:
		return "vibeteam resume " + s.ID + " --approve-merge (or --reject-merge)"
	}
	if s.BlockedReason == vocab.BlockedMergeConflict {
		return "resolve the conflict in the worktree, then vibeteam resume " + s.ID + " --approve-merge"
	}
	if s.BlockedReason == engine.BlockedGateRed {
		return "fix the work in the worktree, then vibeteam resume " + s.ID + " --approve-merge"
	}
	return "vibeteam resume " + s.ID
}
