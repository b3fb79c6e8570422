package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/builtin"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/ui"
)

// executionFlags are shared by run and resume.
func executionFlags() []ucli.Flag {
	return append([]ucli.Flag{
		cmdutil.BaseDirFlag,
		&ucli.StringSliceFlag{Name: "set", Usage: "template variable `key=value` for prompts (repeatable); its value shows in ps: a secret goes better with --set-env or --set-file"},
		secretSetFlags()[0], secretSetFlags()[1],
		&ucli.BoolFlag{Name: "auto-approve", Usage: "append each adapter's autoPolicy.injectArgs and answer prompts with its handlers"},
		&ucli.BoolFlag{Name: "headless", Usage: "run every task headless (CI: no TTY, no prompts); each task then needs a prompt"},
		&ucli.StringFlag{Name: "events", Usage: "write JSONL events to `FILE` (- for stdout)"},
		&ucli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "mirror task output on stderr, prefixed by task name"},
		&ucli.IntFlag{Name: "keep-sessions", Value: 50, Usage: "keep at most `N` sessions; the oldest finished ones are pruned (0 keeps all)", EnvVars: []string{"VIBETEAM_KEEP_SESSIONS"}, Action: atLeastZero("keep-sessions")},
		&ucli.BoolFlag{Name: "keep-going", Aliases: []string{"k"}, Usage: "let the other tasks of a stage finish when one fails (by default the first failure stops them; they re-run on resume)"},
		&ucli.BoolFlag{Name: "strict", Usage: "fail a task whose MCP server's command is not there (by default a warning, and the agent runs without it)"},
		&ucli.StringFlag{Name: "on-interaction", Value: "ask", Usage: "when a task needs a person, `MODE` is ask (at the terminal; park when there is none), park (exit 3) or fail (exit 1)"},
		waitLimitsFlag,
		&ucli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "on stop, how long tasks get between SIGTERM and SIGKILL", Hidden: true},
		&ucli.Float64Flag{Name: "max-cost", Usage: "stop the agents once the run has cost `USD` in all (where the agent CLI reports a cost: claude, opencode); the step blocks, reason budget", Action: positiveCost},
		&ucli.Int64Flag{Name: "max-tokens", Usage: "stop the agents once the run has used `N` input and output tokens in all; the step blocks, reason budget", Action: positiveTokens},
	}, append(sandboxFlags(), notifyFlags()...)...)
}

func runCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:      "run",
		Usage:     "run a workflow or grimoire: a file, a name (.vibeteam/workflows/, .vibeteam/grimoires/, .coven/grimoires/) or a built-in one",
		ArgsUsage: "FILE|NAME",
		Description: "A stage workflow runs its stages in order, the tasks of a stage in parallel; a grimoire runs\n" +
			"its steps in order (agent, script, loop, stage, merge). With --bead ID, a grimoire works on\n" +
			"that bead in its own git worktree; without FILE|NAME it is chosen for the bead.\n\n" +
			"Built-in workflows and grimoires: " + strings.Join(builtin.WorkflowNames(), ", ") + "\n" +
			"(vibeteam preview NAME shows what one would do).",
		Flags: append(append(executionFlags(),
			&ucli.StringFlag{Name: "bead", Usage: "grimoires: work on bead `ID` (bd show ID): in its own git worktree, its status following the run; without FILE|NAME the grimoire is chosen for the bead"},
			&ucli.StringFlag{Name: "bead-file", Usage: "grimoires: the bead from `FILE`, JSON as bd show ID --json prints it (a worktree too, but no bd calls)"},
			&ucli.StringFlag{Name: "base", Usage: "with a bead: the `BRANCH` its worktree starts from and merges back into (default: the current branch)"},
			&ucli.BoolFlag{Name: "force", Usage: "with --bead: run even when the bead has open blockers"},
		), backlogFlags()...),
		Action: func(c *ucli.Context) error {
			sigs := catchInterrupts(streams)
			defer sigs.stop()
			if err := checkBacklogFlags(c); err != nil {
				return err
			}
			if c.NArg() > 1 || c.NArg() == 0 && c.String("bead") == "" && c.String("bead-file") == "" && !c.Bool("ready") {
				return exitf(ExitUsage, "run needs one workflow file or name, or a bead (--bead ID or --bead-file FILE) to choose one (see vibeteam run --help)")
			}
			base, reg, err := cmdutil.BaseAndRegistry(c, streams.Err)
			if err != nil {
				return err
			}
			opts, err := runOptions(c, base)
			if err != nil {
				return err
			}
			if c.Bool("ready") {
				if opts.Vars, _, err = templateVars(c); err != nil {
					return err
				}
				return runBacklog(c, streams, sigs, reg, opts)
			}
			bead, err := beadForRun(c, streams, base)
			if err != nil {
				return err
			}
			name := c.Args().First()
			var def *workflow.Definition
			if name == "" {
				if name, err = chooseGrimoire(streams, base, bead); err != nil {
					return err
				}
				// Chosen by the bead: a name in the grimoire directories.
				def, err = loadChosenGrimoire(name, base, loadOptions(c, reg, base))
			} else {
				def, err = cmdutil.LoadDefinition(name, base, loadOptions(c, reg, base))
			}
			if err != nil {
				return err
			}
			vars, _, err := templateVars(c)
			if err != nil {
				return err
			}
			if def.Kind != workflow.KindGrimoire && bead != nil {
				return exitf(ExitUsage, "a bead is for grimoires; %s is a stage workflow", def.Source)
			}
			if bead == nil && hasMerge(def) {
				return exitf(ExitUsage, "%s has a merge step, which merges a bead's worktree: run it with --bead ID (or --bead-file FILE)", def.Source)
			}
			opts.Vars = vars
			if opts.Sandbox, err = sandboxFor(c, warnLine(streams), base, def, bead != nil, nil); err != nil {
				return err
			}
			if bead != nil {
				if err := bead.claim(streams, c.Bool("force")); err != nil {
					return err
				}
				opts.Bead, opts.BeadSource, opts.Beads = bead.fields, bead.source, bead.tracker
				opts.Workspace = openWorkspace(base, bead.safeID, c.String("base"))
			}
			opts.SourceDigest = fileDigest(def.Source)
			return execute(c, streams, sigs, reg, opts, func(o *core.Orchestrator, opts core.RunOptions) (*core.SessionController, error) {
				return o.Start(def, opts)
			})
		},
	}
}

func resumeCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:      "resume",
		Usage:     "continue a stopped, failed or parked session at its current stage (DONE tasks are skipped)",
		ArgsUsage: "ID",
		Flags: append(executionFlags(),
			&ucli.BoolFlag{Name: "reload", Usage: "read the workflow file again (after a fix) and continue with it: tasks match by id; DONE tasks stay DONE unless their definition changed"},
			&ucli.StringSliceFlag{Name: "rerun", Usage: "run task `ID` again even if it is DONE (repeatable)"},
			&ucli.BoolFlag{Name: "approve-merge", Usage: "grimoires: approve the merge the session waits for (pending_merge), or retry one that conflicted after you resolved it, and go on"},
			&ucli.BoolFlag{Name: "reject-merge", Usage: "grimoires: reject the merge the session waits for; the workflow and the bead are blocked, nothing is discarded"},
			&ucli.StringFlag{Name: "reason", Usage: "with --reject-merge: why (kept in the session)"},
			&ucli.StringFlag{Name: "answer", Usage: "answer `TEXT` to the agents parked because their final message asked a question: each continues its own session with it"},
			&ucli.StringSliceFlag{Name: "allow", Usage: "allow `TOOL` (e.g. Bash, or a rule such as \"Bash(npm test:*)\") to the agents parked because they were denied it: each continues its own session with the tool allowed (repeatable)"},
			&ucli.BoolFlag{Name: "accept-damage", Usage: "for a session whose journal is damaged in the middle: go on from the last whole state before the damage, running again the steps recorded after it"},
		),
		Action: func(c *ucli.Context) error {
			sigs := catchInterrupts(streams)
			defer sigs.stop()
			if c.NArg() != 1 {
				return exitf(ExitUsage, "resume needs a session id (see vibeteam sessions)")
			}
			base, reg, err := cmdutil.BaseAndRegistry(c, streams.Err)
			if err != nil {
				return err
			}
			opts, err := runOptions(c, base)
			if err != nil {
				return err
			}
			mgr := state.NewManager(base)
			id, err := cmdutil.ResolveSession(mgr, c.Args().First())
			if err != nil {
				return err
			}
			// Whether it can be resumed is checked here, once (core.LoadResumable).
			sess, err := core.LoadResumable(mgr, id, c.Bool("accept-damage"))
			if err != nil {
				return resumableError(streams, id, err)
			}
			if sess.Backlog != nil {
				return resumeBacklog(c, streams, sigs, reg, sess, opts)
			}
			if opts.Vars, _, err = templateVars(c); err != nil {
				return err
			}
			if err := core.RestoreVars(sess, opts); err != nil {
				return err
			}
			switch {
			case c.Bool("approve-merge") && c.Bool("reject-merge"):
				return exitf(ExitUsage, "--approve-merge and --reject-merge: one or the other")
			case c.IsSet("reason") && !c.Bool("reject-merge"):
				return exitf(ExitUsage, "--reason goes with --reject-merge")
			case (c.Bool("approve-merge") || c.Bool("reject-merge")) && !hasMerge(sess.WorkflowDefinition):
				return exitf(ExitUsage, "session %s has no merge step to approve or reject", id)
			case c.Bool("approve-merge"):
				opts.MergeDecision = engine.ReviewApprove
			case c.Bool("reject-merge"):
				opts.MergeDecision, opts.MergeReason = engine.ReviewReject, c.String("reason")
			}
			// Checked by core.Resume, which gives them to the parked agents.
			opts.Allow, opts.Answer = c.StringSlice("allow"), c.String("answer")
			if err := resumeBead(sess, &opts); err != nil {
				return exitf(ExitUsage, "session %s: %v", id, err)
			}
			if err := applyReload(c, streams, base, reg, sess, &opts); err != nil {
				return err
			}
			def := sess.WorkflowDefinition
			if opts.Reload != nil {
				def = opts.Reload
			}
			// The stored definition is checked again: adapters may have changed
			// since, and --headless needs prompts.
			if errs := workflow.Validate(def, workflow.LoadOptions{Adapters: reg, ForceHeadless: c.Bool("headless")}); len(errs) > 0 {
				return exitf(ExitUsage, "session %s: %v", id, errs)
			}
			if opts.Sandbox, err = sandboxFor(c, warnLine(streams), base, def, sess.Bead != nil, sess.Sandbox); err != nil {
				return err
			}
			return execute(c, streams, sigs, reg, opts, func(o *core.Orchestrator, opts core.RunOptions) (*core.SessionController, error) {
				return o.Resume(sess, opts)
			})
		},
	}
}

// loadChosenGrimoire loads the grimoire a bead's label or config.yaml
// named: from the grimoire directories, else a built-in; never a file of
// the current directory.
func loadChosenGrimoire(name, base string, opts workflow.LoadOptions) (*workflow.Definition, error) {
	path, err := workflow.ResolveGrimoire(name, base)
	if err == nil {
		def, err := workflow.LoadFile(path, opts)
		if err != nil {
			return nil, err
		}
		return def, nil
	}
	if data, source, ok := builtin.Workflow(name); ok {
		def, err := workflow.Parse(data, source, opts)
		if err != nil {
			return nil, err
		}
		return def, nil
	}
	return nil, exitf(ExitUsage, "%v (built-in grimoires: %s)", err, strings.Join(builtin.WorkflowNames(), ", "))
}

// loadOptions are the checks a workflow gets before run starts anything.
// validate makes the same ones, with an agent CLI that is not installed
// only a warning. A bad --set leaves Vars nil, for the caller to report.
func loadOptions(c *ucli.Context, reg *adapters.Registry, base string) workflow.LoadOptions {
	vars, _ := render.ParseSets(c.StringSlice("set"))
	return workflow.LoadOptions{
		Adapters:      reg,
		ForceHeadless: c.Bool("headless"),
		Vars:          vars,
		BaseDir:       base,
		Commands:      workflow.CheckError,
		DefaultGate:   cmdutil.ProjectGate(base),
	}
}

// lineDelay is how long a status line may wait before it is written when
// stderr is not a terminal.
const lineDelay = 20 * time.Millisecond

// execute creates the controller, runs it with signal handling and the
// display, and maps the outcome to an exit code.
func execute(c *ucli.Context, streams IO, sigs *interrupts, reg *adapters.Registry, opts core.RunOptions, start func(*core.Orchestrator, core.RunOptions) (*core.SessionController, error)) error {
	if !streams.ErrTTY {
		// Everything this run prints to a stderr that is no terminal (a
		// pipe, read by CI or a test) goes through one gathering writer, in
		// order: a status line waits at most lineDelay.
		late := state.NewGatheringWriter(streams.Err, lineDelay)
		defer late.Flush()
		streams.Err = late
	}
	if err := warnOpenDirs(streams, opts.BaseDir); err != nil {
		return err
	}
	notify, err := notifierFor(c, opts.BaseDir, func(w string) { fmt.Fprintln(streams.Err, "warning: "+w) })
	if err != nil {
		return err
	}
	evOut, err := openEvents(streams, c.String("events"))
	if err != nil {
		return exitf(ExitUsage, "%v", err)
	}
	defer evOut.Close()
	disp := ui.NewDisplay(streams.UI(), c.Bool("verbose"))
	defer disp.Close()

	prompt, closeTTY := askAt(streams, disp, &opts)
	defer closeTTY()

	if s := sigs.attach(); s != nil {
		return exitf(cmdutil.InterruptCode(s), "interrupted before the session started; nothing to resume")
	}
	orch := core.NewOrchestrator(reg, evOut.of(""), disp.Handle)
	ctrl, err := start(orch, opts)
	if err != nil {
		return startError(streams, err)
	}
	disp.Attach(ctrl)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A signal that came while the session was being created is waiting in
	// sigs.C: the watcher stops the run as soon as it starts.
	stopWatch := sigs.watch(func(s os.Signal) {
		disp.Note(fmt.Sprintf("%s: stopping tasks and saving session %s (again to kill them now)", s, ctrl.ID))
		cancel()
	}, func() {
		disp.Note("killing every task now")
		ctrl.Kill()
	})

	var promptDone <-chan struct{}
	if prompt != nil {
		promptDone = prompt.Done()
		go prompt.Run(ctx, ctrl)
	}
	out, err := ctrl.Run(ctx)
	cancel()
	stopWatch()
	if promptDone != nil {
		<-promptDone
	}
	disp.Finish()
	if err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	return sessionExit(streams, sigs, notify, ctrl.Session(), out.Status, out.FailedTask)
}

// askAt sets up who answers a task that needs a person: the terminal, if
// there is one (--on-interaction=ask, checked with the other choices by
// runOptions); else the session parks. closeTTY closes the terminal it
// opened.
func askAt(streams IO, disp *ui.Display, opts *core.RunOptions) (prompt *ui.Prompter, closeTTY func()) {
	closeTTY = func() {}
	if opts.Interaction != engine.InteractionAsk {
		return nil, closeTTY
	}
	if !opts.ForceHeadless {
		if tty, err := ttyOf(streams); err == nil {
			prompt = ui.NewPrompter(tty, disp)
			disp.SetPrompter(prompt)
			opts.Review, opts.Permission, opts.Question = prompt.Review, prompt.Permission, prompt.Question
			return prompt, func() { _ = tty.Close() }
		}
	}
	opts.Interaction = engine.InteractionPark
	return nil, closeTTY
}

// resumableError is the exit of a session that cannot be resumed
// (core.LoadResumable): exit 0 for one already completed, nothing to do.
func resumableError(streams IO, id string, err error) error {
	if errors.Is(err, core.ErrAlreadyCompleted) {
		fmt.Fprintf(streams.Err, "session %s already completed; nothing to resume\n", id)
		return nil
	}
	if _, coded := err.(cmdutil.Coder); coded {
		return err
	}
	return cmdutil.SessionLoadError(err)
}

// startError is the exit of a session that could not start or resume.
func startError(streams IO, err error) error {
	if errors.Is(err, core.ErrAlreadyCompleted) {
		fmt.Fprintln(streams.Err, err)
		return nil
	}
	var nf *state.NotFoundError
	if errors.As(err, &nf) {
		return cmdutil.SessionLoadError(err)
	}
	if errors.As(err, new(*state.LockedError)) || errors.As(err, new(*vocab.UsageError)) {
		// The person's to fix (a session another process holds, a prompt
		// that does not render, an --answer with no question): the error
		// carries exit 2.
		return err
	}
	return exitf(ExitFailed, "%v", err)
}

// sessionExit is how a run that ended ends for the shell: its exit code,
// and what to do next.
func sessionExit(streams IO, sigs *interrupts, notify *notifier, sess *state.Session, status vocab.SessionStatus, failedTask string) error {
	if sig := sigs.got(); sig != nil && status != state.StatusCompleted && status != state.StatusCancelled {
		// A signal at a prompt (a merge review, a question) parks the
		// session; the exit says it was the signal, as at any other moment.
		return exitf(cmdutil.InterruptCode(sig), "interrupted; session %s saved (%s), continue with: vibeteam resume %s", sess.ID, status, sess.ID)
	}
	notify.session(sess, "")
	switch status {
	case state.StatusCompleted:
		took := time.Since(sess.StartTime).Round(10 * time.Millisecond)
		if n := len(sess.FailedSteps); n > 0 {
			// It reached its end by design, but it is not a clean success.
			fmt.Fprintf(streams.Err, "session %s completed with %d failed step(s): %s (%s); details: vibeteam show %s\n", sess.ID, n, safe(strings.Join(sess.FailedSteps, ", ")), took, sess.ID)
			return nil
		}
		if sess.Note != "" {
			fmt.Fprintf(streams.Err, "note: %s\n", safe(sess.Note))
		}
		fmt.Fprintf(streams.Err, "session %s completed (%s); details: vibeteam show %s\n", sess.ID, took, sess.ID)
		return nil
	case state.StatusBlocked:
		return exitf(ExitParked, "%s\nsession %s is blocked; fix the cause, then: vibeteam resume %s [--set key=value]", blockedReport(sess), sess.ID, sess.ID)
	case state.StatusCancelled:
		return exitf(cmdutil.InterruptCode(sigs.got()), "interrupted; session %s saved as cancelled. %s", sess.ID, cancelledHint(sess))
	case state.StatusLimited:
		return exitf(ExitParked, "%s", limitedReport(sess))
	case state.StatusPendingMerge:
		return exitf(ExitParked, "session %s waits for a review of its merge (%s into %s): vibeteam resume %s --approve-merge, or --reject-merge [--reason TEXT]; vibeteam show %s for the changes", sess.ID, safe(sess.Branch), safe(sess.BaseBranch), sess.ID, sess.ID)
	case state.StatusWaiting:
		if denied := waitingReport(sess); denied != "" {
			return exitf(ExitParked, "%s\nsession %s is waiting", denied, sess.ID)
		}
		return exitf(ExitParked, "session %s is %s; continue with: vibeteam resume %s", sess.ID, status, sess.ID)
	default:
		return exitf(ExitFailed, "%s\nsession %s failed; %s", failureReport(sess, failedTask), sess.ID, resumeHint(sess))
	}
}

// cancelledHint says what resume does to a cancelled session: it is not
// over for good; resume takes it up again, the interrupted work first.
func cancelledHint(sess *state.Session) string {
	where := "the interrupted tasks of its stage run again"
	if sess.WorkflowDefinition != nil && sess.WorkflowDefinition.Kind == workflow.KindGrimoire {
		where = "the interrupted step runs again"
		if r := sess.Runs[sess.Cursor]; r != nil && r.Status == vocab.StepDone {
			// It ended (a merge that landed): what follows it runs.
			where = fmt.Sprintf("step %q ended; what follows it runs", safe(r.Name))
		} else if r != nil {
			where = fmt.Sprintf("step %q runs again", safe(r.Name))
		}
	}
	return fmt.Sprintf("Nothing more runs unless you resume it: vibeteam resume %s takes it up again where it stopped (%s)", sess.ID, where)
}

// hasMerge reports whether a definition has a merge step.
func hasMerge(def *workflow.Definition) bool {
	if def == nil {
		return false
	}
	for s := range def.AllSteps() {
		if s.Type == workflow.StepMerge {
			return true
		}
	}
	return false
}

// blockedReport says where a grimoire is blocked, why, and what the step
// printed last.
func blockedReport(sess *state.Session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "blocked (%s): %s", safe(sess.BlockedReason), safe(sess.Error))
	if sess.BlockedContext != "" {
		b.WriteString("\nlast output:")
		for _, l := range strings.Split(sess.BlockedContext, "\n") {
			fmt.Fprintf(&b, "\n  | %s", safeLine(l))
		}
	}
	return b.String()
}

func ttyOf(streams IO) (*os.File, error) {
	if streams.OpenTTY == nil {
		return nil, errors.New("no terminal")
	}
	return streams.OpenTTY()
}

// waitingReport names the tasks parked because their agent was denied a
// tool or asked a question, what it was, and the command that goes on;
// "" when there is none.
func waitingReport(sess *state.Session) string {
	var b strings.Builder
	var waiting []state.TaskRef
	for t := range sess.AllTasks() {
		if t.Record != nil && t.Status == state.TaskWaitingForUser && t.Record.Agent != nil {
			waiting = append(waiting, t)
		}
	}
	slices.SortFunc(waiting, func(a, b state.TaskRef) int { return strings.Compare(a.ID, b.ID) })
	for _, t := range waiting {
		id, rec := t.ID, t.Record
		switch rec.Reason {
		case engine.DeniedReason:
			tools := rec.Agent.DeniedTools()
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "task %s: %s\n  allow it and continue the agent's session: vibeteam resume %s", ui.SessionTaskLabel(sess, id), safe(rec.Excerpt), sess.ID)
			for _, tool := range tools {
				b.WriteString(" --allow " + shellWord(tool))
			}
		case engine.QuestionReason:
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "task %s: the agent %s\n  answer it and continue the agent's session: vibeteam resume %s --answer TEXT", ui.SessionTaskLabel(sess, id), safe(rec.Excerpt), sess.ID)
		}
	}
	return b.String()
}

// failureReport says which task failed, how, and its last output lines.
func failureReport(sess *state.Session, taskID string) string {
	// Text from the workflow and the task goes through safe.
	if taskID == "" {
		return safe(sess.Error) // not a task's failure: the session's own
	}
	label := ui.SessionTaskLabel(sess, taskID)
	t, _ := sess.Task(taskID)
	rec := t.Record
	if rec == nil {
		return fmt.Sprintf("task %s failed", label)
	}
	var b strings.Builder
	how := rec.Error
	switch {
	case rec.ExitCode != nil && rec.Reason == vocab.ReasonAgentError:
		// What the agent said is the news; its exit code is a detail.
		how = rec.Error + " (exit code " + strconv.Itoa(*rec.ExitCode) + ")"
	case rec.ExitCode != nil:
		how = "exit code " + strconv.Itoa(*rec.ExitCode)
	}
	fmt.Fprintf(&b, "task %s failed: %s", label, safe(how))
	if rec.Reason != "" && rec.Reason != vocab.ReasonExit {
		fmt.Fprintf(&b, " (%s)", safe(rec.Reason))
	}
	if len(rec.OutputTail) > 0 {
		tail := rec.OutputTail
		if len(tail) > 10 {
			tail = tail[len(tail)-10:]
		}
		fmt.Fprintf(&b, "\nlast output of %s:", label)
		for _, l := range tail {
			fmt.Fprintf(&b, "\n  | %s", safeLine(l))
		}
	}
	if rec.LogPath != "" {
		fmt.Fprintf(&b, "\nfull log: %s", safe(rec.LogPath))
	}
	return strings.TrimRight(b.String(), "\n")
}

// shellWord is s as one word of a command line: as is when it needs no
// quoting (Bash, mcp__ra__echo), single-quoted otherwise ("Bash(npm test:*)").
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:@=+") == "" {
		return s
	}
	return render.ShellQuote(s)
}
