// Package showcmd is what a person reads of sessions: `vibeteam show` (one
// session) and `vibeteam sessions` (the list, and what waits for them).
package showcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/internal/excerpt"
	"github.com/vibeteam/vibeteam/ui"
)

// Options are what `vibeteam show` is asked.
type Options struct {
	IO      cmdutil.IO
	Manager *state.Manager
	ID      string // the session's whole id
	JSON    bool   // --json
	// Backlog shows a backlog session (run --ready): its beads.
	Backlog func(out io.Writer, mgr *state.Manager, s *state.Session)
}

// NewCmdShow is the `show` command; backlog shows a backlog session. Its
// action gathers the Options and hands them to runF (nil: Run).
func NewCmdShow(streams cmdutil.IO, backlog func(io.Writer, *state.Manager, *state.Session), runF func(*Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
	return &ucli.Command{
		Name:      "show",
		Usage:     "show one session: tasks, statuses, exit codes, last output lines, log locations",
		ArgsUsage: "ID",
		Flags:     []ucli.Flag{cmdutil.BaseDirFlag, &ucli.BoolFlag{Name: "json", Usage: "print the session file's JSON"}},
		Action: func(c *ucli.Context) error {
			mgr, id, err := cmdutil.SessionArg(c)
			if err != nil {
				return err
			}
			return runF(&Options{IO: streams, Manager: mgr, ID: id, JSON: c.Bool("json"), Backlog: backlog})
		},
	}
}

// Run shows the session opts name.
func Run(opts *Options) error {
	mgr := opts.Manager
	s, err := mgr.Load(opts.ID)
	if err != nil {
		return cmdutil.SessionLoadError(err)
	}
	if err := s.Check(); err != nil && !opts.JSON {
		return cmdutil.Exitf(cmdutil.ExitUsage, "session %s is damaged (%s): %v", s.ID, mgr.SessionPath(s.ID), err)
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	if s.Backlog != nil {
		if opts.Backlog != nil {
			opts.Backlog(opts.IO.Out, mgr, s)
		}
		return nil
	}
	out := opts.IO.Out
	sum := summarize(mgr, s)
	showHeader(out, mgr, s, sum)
	if s.WorkflowDefinition.Kind == workflow.KindGrimoire {
		showGrimoire(out, s, sum.Running)
		return nil
	}
	for i, st := range s.WorkflowDefinition.Stages() {
		marker := " "
		if i == s.CurrentStageIndex {
			marker = ">"
		}
		fmt.Fprintf(out, "\n%s stage %d %s\n", marker, i+1, ui.Safe(st.ID))
		for _, t := range st.Tasks {
			showTask(out, s, t)
		}
	}
	if !sum.Running && (s.Status == state.StatusWaiting || s.Status == state.StatusFailed) {
		fmt.Fprintln(out, "\nactions")
		fmt.Fprintf(out, "  resume  vibeteam resume %s   go on where it stopped (a waiting task is asked again)\n", resumeArgs(s))
		fmt.Fprintf(out, "  cancel  vibeteam cancel %s   give it up\n", s.ID)
	}
	return nil
}

// showHeader is the session's head: its id, workflow, status and times,
// what stopped it, its events, its agents' spend and its budgets.
func showHeader(out io.Writer, mgr *state.Manager, s *state.Session, sum Summary) {
	status := string(s.Status)
	if sum.Running {
		status += " (running)"
	}
	// Everything below comes from the session file, which holds
	// text from the workflow and the agents: it goes through safe.
	fmt.Fprintf(out, "session   %s\nworkflow  %s\n", ui.Safe(s.ID), ui.Safe(s.Workflow))
	if s.Goal != "" {
		fmt.Fprintf(out, "goal      %s\n", ui.Safe(s.Goal))
	}
	if s.WorkflowDefinition.Kind == workflow.KindGrimoire {
		fmt.Fprintf(out, "status    %s\nstarted   %s\nupdated   %s\n", status,
			s.StartTime.Local().Format(time.DateTime), s.UpdatedAt.Local().Format(time.DateTime))
	} else {
		fmt.Fprintf(out, "status    %s\nstage     %d/%d\nstarted   %s\nupdated   %s\n", status, min(sum.Stage+1, sum.Stages), sum.Stages,
			s.StartTime.Local().Format(time.DateTime), s.UpdatedAt.Local().Format(time.DateTime))
	}
	if b := s.Broken; b != nil {
		fmt.Fprintf(out, "damaged   %s:%d: %s\n          what is below stops before that line: %s not applied; vibeteam resume %s refuses, --accept-damage goes on from here, running those steps again\n",
			ui.Safe(b.Path), b.Line, ui.Safe(b.Why), ui.Safe(b.LostText()), s.ID)
	}
	if s.Note != "" {
		fmt.Fprintf(out, "note      %s\n", ui.Safe(s.Note))
	}
	if s.Error != "" {
		// A session parked for a person (:quit at the prompt,
		// --on-interaction park) waits: no error of it.
		label := "error    "
		if s.Status == state.StatusWaiting {
			label = "waiting  "
		}
		fmt.Fprintf(out, "%s %s\n", label, ui.Safe(s.Error))
	}
	if s.Limit != nil && (s.Status == state.StatusLimited || sum.Running) {
		fmt.Fprintf(out, "limited   %s\n          %s says: %s\n", ui.LimitLine(s.Limit, time.Now()), ui.Safe(s.Limit.Adapter), ui.Safe(excerpt.OneLine(s.Limit.Message, 0)))
	}
	fmt.Fprintf(out, "events    %s\n", ui.Safe(mgr.EventLogPath(s.ID)))
	if t := s.AgentTotals(); t.Runs > 0 {
		fmt.Fprintf(out, "agents    %s in, %s out (cache %s read, %s written), %d tool call(s)%s, over %d run(s)\n",
			ui.Count(t.Tokens.Input), ui.Count(t.Tokens.Output), ui.Count(t.Tokens.CacheRead), ui.Count(t.Tokens.CacheWrite), t.ToolCalls, ui.Cost(t.CostUSD), t.Runs)
	}
	showBudgets(out, s)
}

// showTask is a stage task's line, and under it its error, agent, excerpt,
// last output or screen, and log.
func showTask(out io.Writer, s *state.Session, t workflow.Task) {
	task, _ := s.Task(t.ID)
	rec := task.Record
	line := fmt.Sprintf("    %s %s %s", ui.Pad(ui.TaskLabel(t.DisplayName(), t.ID), 20), ui.Pad(ui.Safe(t.Adapter), 10), ui.Pad(ui.Safe(string(task.Status)), 17))
	if rec != nil {
		if rec.ExitCode != nil {
			line += fmt.Sprintf(" exit %d", *rec.ExitCode)
		}
		if rec.Reason != "" && rec.Reason != vocab.ReasonExit {
			line += " (" + ui.Safe(rec.Reason) + ")"
		}
		if rec.StartedAt != nil && rec.EndedAt != nil {
			line += " " + rec.EndedAt.Sub(*rec.StartedAt).Round(10*time.Millisecond).String()
		}
	}
	fmt.Fprintln(out, strings.TrimRight(line, " "))
	if rec == nil {
		return
	}
	if rec.Error != "" {
		label := "error"
		if task.Status == state.TaskWaitingForUser {
			label = "waiting"
		}
		fmt.Fprintf(out, "      %s: %s\n", label, ui.Safe(rec.Error))
	}
	if rec.Agent != nil {
		fmt.Fprintf(out, "      agent: %s\n", agentLine(rec.Agent))
	}
	if rec.Excerpt != "" && (rec.Reason == engine.DeniedReason || rec.Reason == engine.QuestionReason) {
		fmt.Fprintf(out, "      %s\n", ui.Safe(rec.Excerpt))
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
		fmt.Fprintf(out, "      | %s\n", ui.SafeLine(l))
	}
	if rec.LogPath != "" {
		fmt.Fprintf(out, "      log: %s\n", ui.Safe(rec.LogPath))
	}
}

// showGrimoire prints a grimoire session's step runs, in walk order and
// indented by loop depth, then what is failed or blocked and what to do.
func showGrimoire(out io.Writer, s *state.Session, running bool) {
	showWhere(out, s)
	showStepRuns(out, s)
	showHowItStopped(out, s)
	if !running && s.Status == state.StatusPendingMerge {
		showReview(out, s)
		return
	}
	if !running && s.Status != state.StatusCompleted {
		showActions(out, s)
	}
}

// showWhere is where a grimoire session works: its bead, its worktree, its
// merge and the gates it ran.
func showWhere(out io.Writer, s *state.Session) {
	if id, _ := s.Bead["id"].(string); id != "" {
		title, _ := s.Bead["title"].(string)
		fmt.Fprintf(out, "bead      %s: %s (%s)\n", ui.Safe(id), ui.Safe(title), ui.Safe(s.BeadSource))
	}
	if s.Worktree != "" {
		fmt.Fprintf(out, "worktree  %s\n", worktreeLine(s))
	} else if s.WorkDir != "" {
		fmt.Fprintf(out, "work dir  %s\n", ui.Safe(s.WorkDir))
	}
	if s.Merged != "" {
		fmt.Fprintf(out, "merged    %s\n", ui.Safe(s.Merged))
	}
	for _, g := range s.Gates {
		fmt.Fprintf(out, "gate      %s\n", gateRunLine(g))
		if !g.Green && g.LogPath != "" {
			fmt.Fprintf(out, "          log: %s\n", ui.Safe(g.LogPath))
		}
	}
}

// showStepRuns is each step run, in walk order, indented by loop depth.
func showStepRuns(out io.Writer, s *state.Session) {
	keys := make([]string, 0, len(s.Runs))
	for k := range s.Runs {
		keys = append(keys, k)
	}
	flow.SortKeys(keys)
	fmt.Fprintln(out, "\nsteps")
	for _, k := range keys {
		r := s.Runs[k]
		indent := strings.Repeat("  ", strings.Count(k, "/"))
		line := fmt.Sprintf("  %s%s %s (%s) %s", indent, ui.StepRunGlyph(r.Status), ui.Safe(r.Name), ui.Safe(r.Type), ui.Safe(r.Status))
		if r.Iteration > 0 {
			line += fmt.Sprintf(" [iteration %d]", r.Iteration)
		}
		if r.Type == workflow.StepScript && r.Status != vocab.StepSkipped && r.Status != vocab.StepRunning {
			line += fmt.Sprintf(" exit %d", r.ExitCode)
		}
		if r.DurationMS > 0 {
			line += " " + (time.Duration(r.DurationMS) * time.Millisecond).String()
		}
		line += "  @" + k
		fmt.Fprintln(out, line)
		if r.Reason != "" && r.Status != vocab.StepDone {
			fmt.Fprintf(out, "  %s    reason: %s\n", indent, ui.Safe(r.Reason))
		}
		if r.Summary != "" {
			fmt.Fprintf(out, "  %s    summary: %s\n", indent, ui.Safe(r.Summary))
		}
		if r.Task != nil && r.Task.Agent != nil {
			fmt.Fprintf(out, "  %s    agent: %s\n", indent, agentLine(r.Task.Agent))
		}
		if r.LogPath != "" {
			fmt.Fprintf(out, "  %s    log: %s\n", indent, ui.Safe(r.LogPath))
		}
	}
}

// showHowItStopped is what failed, what each iteration did, and where and
// why the grimoire blocked.
func showHowItStopped(out io.Writer, s *state.Session) {
	if len(s.FailedSteps) > 0 {
		fmt.Fprintf(out, "\nfailed steps (the grimoire went on by design): %s\n", ui.Safe(strings.Join(s.FailedSteps, ", ")))
	}
	if len(s.IterationSummaries) > 0 {
		fmt.Fprintln(out, "\niterations")
		for _, l := range s.IterationSummaries {
			fmt.Fprintf(out, "  %s\n", ui.Safe(l))
		}
	}
	if s.Status == state.StatusBlocked {
		fmt.Fprintf(out, "\nblocked   %s at step %q\n", ui.Safe(s.BlockedReason), ui.Safe(s.BlockedStep))
		if s.BlockedContext != "" {
			fmt.Fprintln(out, "context")
			for _, l := range strings.Split(s.BlockedContext, "\n") {
				fmt.Fprintf(out, "  | %s\n", ui.SafeLine(l))
			}
		}
	}
}

// showReview is what a person can do about a merge that waits for them.
func showReview(out io.Writer, s *state.Session) {
	fmt.Fprintln(out, "\nthe merge waits for your review")
	fmt.Fprintf(out, "  git -C %s diff %s...%s      the changes\n", ui.Safe(s.Worktree), ui.Safe(s.BaseBranch), ui.Safe(s.Branch))
	fmt.Fprintf(out, "  vibeteam resume %s --approve-merge            merge, and go on\n", s.ID)
	fmt.Fprintf(out, "  vibeteam resume %s --reject-merge --reason …  block it (nothing is discarded)\n", s.ID)
	fmt.Fprintf(out, "  vibeteam cancel %s [--clean]                 give the bead up\n", s.ID)
}

// showActions is what a person can do to move a stopped session on.
func showActions(out io.Writer, s *state.Session) {
	fmt.Fprintln(out, "\nactions")
	if r := s.Runs[s.Cursor]; r != nil && r.Status == vocab.StepDone {
		// A step that ended (a merge that landed) does not run again.
		fmt.Fprintf(out, "  resume  vibeteam resume %s                 go on after the step at %s (it ended %s)\n", resumeArgs(s), ui.Safe(s.Cursor), ui.Safe(r.Status))
	} else if s.Cursor != "" {
		fmt.Fprintf(out, "  retry   vibeteam resume %s                 run the step at %s again and go on\n", resumeArgs(s), ui.Safe(s.Cursor))
	} else {
		fmt.Fprintf(out, "  retry   vibeteam resume %s                 go on where it stopped\n", resumeArgs(s))
	}
	fmt.Fprintf(out, "          vibeteam resume %s --set KEY=VALUE change a variable first\n", s.ID)
	if s.BlockedReason == engine.BlockedGateRed {
		fmt.Fprintf(out, "  (make the gate pass in %s first: the context above is its output)\n", ui.Safe(s.Worktree))
		fmt.Fprintf(out, "          vibeteam resume %s --approve-merge  merge and run the gate again\n", s.ID)
	}
	if s.BlockedReason == vocab.BlockedMergeConflict {
		fmt.Fprintf(out, "  (resolve the conflict in %s first: git rebase %s, or git merge %s, then commit)\n", ui.Safe(s.Worktree), ui.Safe(s.BaseBranch), ui.Safe(s.BaseBranch))
		fmt.Fprintf(out, "          vibeteam resume %s --approve-merge  retry the merge\n", s.ID)
	}
	switch {
	case s.Status == state.StatusCancelled && s.Worktree != "":
		fmt.Fprintf(out, "  clean   vibeteam cancel %s --clean         it is cancelled: remove its worktree and branch\n", s.ID)
	case s.Status == state.StatusCancelled:
	case s.Bead != nil && s.Merged != "":
		fmt.Fprintf(out, "  cancel  vibeteam cancel %s                 give it up: its merge landed (%s), so the bead is closed\n", s.ID, ui.Safe(s.Merged))
	case s.Bead != nil:
		fmt.Fprintf(out, "  cancel  vibeteam cancel %s                 give it up: the bead goes back to open (--clean also removes its worktree)\n", s.ID)
	default:
		fmt.Fprintf(out, "  cancel  vibeteam cancel %s                 give it up\n", s.ID)
	}
	fmt.Fprintf(out, "  see     vibeteam log %s                    the step tree with outputs\n", s.ID)
}

// worktreeLine says where a session's worktree is, or that it is gone (a
// merged one is removed at the end).
func worktreeLine(s *state.Session) string {
	if _, err := os.Stat(s.Worktree); err != nil {
		if s.Merged != "" {
			return fmt.Sprintf("%s, removed (branch %s merged into %s)", ui.Safe(s.Worktree), ui.Safe(s.Branch), ui.Safe(s.BaseBranch))
		}
		return fmt.Sprintf("%s, not there any more (branch %s)", ui.Safe(s.Worktree), ui.Safe(s.Branch))
	}
	return fmt.Sprintf("%s (branch %s, merges into %s)", ui.Safe(s.Worktree), ui.Safe(s.Branch), ui.Safe(s.BaseBranch))
}

// resumeArgs is what follows "vibeteam resume" to go on with s: its id,
// and --accept-damage when its journal is damaged (resume refuses it
// otherwise).
func resumeArgs(s *state.Session) string {
	if s.Broken != nil {
		return s.ID + " --accept-damage"
	}
	return s.ID
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
	return excerpt.ScreenEnd(runner.RenderScreen(raw, runner.DefaultCols, runner.DefaultRows), 8)
}

// agentLine is what a headless agent's report says about its run, on one
// line: its session, tokens, cost, tool calls, and what went wrong.
func agentLine(a *agentstream.Summary) string {
	line := fmt.Sprintf("%s in, %s out tokens, %d tool call(s)%s", ui.Count(a.Tokens.Input), ui.Count(a.Tokens.Output), a.ToolCalls, ui.Cost(a.CostUSD))
	if a.Turns > 0 {
		line += fmt.Sprintf(", %d turn(s)", a.Turns)
	}
	if a.SessionID != "" {
		line += ", session " + ui.Safe(a.SessionID)
	}
	if a.IsError {
		line += ", reported an error"
	}
	if n := len(a.Denials); n > 0 {
		line += fmt.Sprintf(", %d denial(s)", n)
	}
	return line
}

// showBudgets gives the session's spend against each budget it has: the
// run's (--max-cost, --max-tokens) and the grimoire's.
func showBudgets(out io.Writer, s *state.Session) {
	t := s.AgentTotals()
	tokens := budget.Tokens(t.Tokens.Input, t.Tokens.Output)
	if l := s.RunBudget; l != nil && !l.IsZero() {
		fmt.Fprintf(out, "budget    %s (the run's: --max-cost, --max-tokens)\n", budget.Against(tokens, t.CostUSD, *l))
	}
	if def := s.WorkflowDefinition; def != nil && def.Budget != nil && !def.Budget.IsZero() {
		fmt.Fprintf(out, "budget    %s (the grimoire's)\n", budget.Against(tokens, t.CostUSD, *def.Budget))
	}
}

// gateRunLine is one of a session's gate runs, for show.
func gateRunLine(g state.GateRun) string {
	glyph := "✓"
	if !g.Green {
		glyph = "✗"
	}
	line := fmt.Sprintf("%s %s: %s, on %s at %s", glyph, ui.Safe(g.Step), ui.GateVerdict(g.Green, g.ExitCode, g.Reason, time.Duration(g.DurationMS)*time.Millisecond),
		ui.Safe(g.Base), ui.ShortCommit(g.BaseCommit))
	if g.Attempt > 1 {
		line += fmt.Sprintf(" (try %d)", g.Attempt)
	}
	if len(g.Batch) > 1 {
		line += fmt.Sprintf(", a batch of %d: %s", len(g.Batch), ui.Safe(strings.Join(g.Batch, ", ")))
	}
	return line
}
