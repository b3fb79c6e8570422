// Package cli is the vibeteam command line: the app and its commands, run
// and resume and the bead and backlog set-up behind them here, the other
// command groups in packages of their own (cli/*cmd). What it shows while a
// run goes on is the ui package's; core prints nothing.
package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/vibeteam/vibeteam/builtin"
	"github.com/vibeteam/vibeteam/cli/cancelcmd"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/cli/completioncmd"
	"github.com/vibeteam/vibeteam/cli/doctorcmd"
	"github.com/vibeteam/vibeteam/cli/landcmd"
	"github.com/vibeteam/vibeteam/cli/logcmd"
	"github.com/vibeteam/vibeteam/cli/previewcmd"
	"github.com/vibeteam/vibeteam/cli/reportcmd"
	"github.com/vibeteam/vibeteam/cli/showcmd"
	"github.com/vibeteam/vibeteam/cli/validatecmd"
	"github.com/vibeteam/vibeteam/internal/suggest"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/sandbox/egress"
	"github.com/vibeteam/vibeteam/core/state"
)

// Main runs the CLI and returns the process exit code.
func Main(args []string, streams IO) int {
	// The completion protocol's arguments are a command line being typed,
	// not options for us: they are neither reordered nor parsed.
	if len(args) > 1 && args[1] == completioncmd.Command {
		completioncmd.Complete(streams, newApp(streams), args[2:])
		return ExitOK
	}
	// The in-sandbox bridge to the egress proxy: hidden, not a command a
	// person types (the sandbox runs it).
	if len(args) > 1 && args[1] == egress.BridgeCommand {
		return egressBridge(args[2:], streams)
	}
	// Secrets are the sessions' of this invocation (several in a backlog
	// run), never a previous in-process one's; and the credentials of the
	// built-in adapters in the environment, which `show` and `log` print
	// as *** too.
	state.SetSecrets(adapters.BuiltinAuthValues())
	// Whatever vibeteam prints (messages, the board, --verbose, block
	// reports, show, log) shows a secret as ***, as its files do: the one
	// choke point of each stream.
	streams.Out, streams.Err = state.RedactWriter(streams.Out), state.RedactWriter(streams.Err)
	app := newApp(streams)
	app.Metadata = map[string]any{telemetryKey: &lazyTelemetry{warnTo: streams}}
	err := app.Run(interspersed(expandWaitLimits(args), app))
	shutdownTelemetry(app)
	if err == nil {
		return ExitOK
	}
	// The one place an error becomes an exit status: its own code (an
	// ExitError a command chose, or an error of core that carries one),
	// else usage: anything urfave/cli itself rejects (unknown flag, bad
	// value).
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(streams.Err, "vibeteam:", msg)
	}
	return cmdutil.ExitCode(err)
}

func newApp(streams IO) *ucli.App {
	app := &ucli.App{
		Name:  "vibeteam",
		Usage: "run AI coding agents as a team, one workflow per invocation",
		Description: `vibeteam runs one workflow per invocation, of either kind:
  - a stage workflow: stages in order, the tasks of a stage in parallel, each
    task an agent CLI (claude, codex, gemini, opencode, shell, or any adapter
    file in .vibeteam/adapters);
  - a grimoire: agent, script, loop, stage and merge steps in order, passing
    results to each other (.vibeteam/grimoires/, coven's .coven/grimoires/),
    alone or on a bead (an issue of bd, run --bead ID) in its own worktree.
Built-in: ` + strings.Join(builtin.WorkflowNames(), ", ") + ` (vibeteam preview NAME shows one).
Every state change is saved to .vibeteam/sessions/<id>.json, so any run can
be resumed.

Interactive tasks run in a pseudo-terminal; when one needs a person and no
--auto-approve policy answers, vibeteam asks at the terminal (or parks the
session when there is none).

A session ID may be shortened to any prefix that only one session has.

Exit codes: 0 completed, 1 failed, 2 usage or validation error,
3 parked (resumable), 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP).

Try it:  vibeteam run demo`,
		Reader:    streams.In,
		Writer:    streams.Out,
		ErrWriter: streams.Err,
		// Our own help command replaces urfave/cli's, which answers an
		// unknown topic with a message of its own and exit code 3.
		HideHelpCommand: true,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "base-dir", Usage: "project directory holding .vibeteam/ (default: the git top-level, else the current directory)", EnvVars: []string{"VIBETEAM_BASE_DIR"}},
			&ucli.BoolFlag{Name: "version", Usage: "print the version and exit"},
			// urfave/cli adds --help itself only when it also adds its help command.
			ucli.HelpFlag,
		},
		Before: func(c *ucli.Context) error {
			if c.Bool("version") {
				fmt.Fprintln(streams.Out, versionString())
				return &exitError{Exit: ExitOK}
			}
			return nil
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return ucli.ShowAppHelp(c)
			}
			return unknownCommand(c.App, c.Args().First())
		},
		Commands: []*ucli.Command{
			runCommand(streams),
			resumeCommand(streams),
			validatecmd.NewCmdValidate(streams, nil),
			previewcmd.NewCmdPreview(streams, nil),
			showcmd.NewCmdSessions(streams, nil),
			showcmd.NewCmdShow(streams, showBacklog, nil),
			logcmd.NewCmdLog(streams, nil),
			reportcmd.NewCmdReport(streams, nil),
			cancelcmd.NewCmdCancel(streams, nil),
			readyCommand(streams),
			landcmd.NewCmdLand(streams, nil),
			adaptersCommand(streams),
			doctorcmd.NewCmdDoctor(streams, nil),
			schemaCommand(streams),
			completioncmd.NewCmdCompletion(streams, nil),
			versionCommand(streams),
			helpCommand(),
		},
		ExitErrHandler: func(*ucli.Context, error) {}, // Main maps errors to codes
		OnUsageError:   usageError,
	}
	for _, cmd := range app.Commands {
		// Without it, urfave/cli prints "Incorrect Usage" and the whole help
		// to stdout.
		cmd.OnUsageError = usageError
		// A "help" word after a command is its argument (a workflow may be
		// called help), not a hidden subcommand; --help stays.
		cmd.HideHelpCommand = true
		rejectArgs(cmd)
	}
	return app
}

// usageError turns a flag that urfave/cli (the flag package) rejected into
// one line naming the command, with a suggestion for a misspelt flag.
func usageError(c *ucli.Context, err error, _ bool) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag " + cmdutil.Dashed(name)
		if s := closest(name, flagNames(c.Command.VisibleFlags())); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", cmdutil.Dashed(s))
		}
	} else {
		// The flag package writes every flag with one dash.
		msg = singleDash.ReplaceAllString(msg, "$1--$2")
	}
	return exitf(ExitUsage, "%s; see %s --help", msg, c.Command.HelpName)
}

var singleDash = regexp.MustCompile(`(^|[\s:])-([a-z][a-z0-9-]+)`)

func flagNames(flags []ucli.Flag) []string {
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return names
}

func unknownCommand(app *ucli.App, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := closest(name, commandNames(app)); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return exitf(ExitUsage, "%s; see vibeteam --help", msg)
}

func commandNames(app *ucli.App) []string {
	var names []string
	for _, cmd := range app.VisibleCommands() {
		names = append(names, cmd.Names()...)
	}
	return names
}

// closest is the word of known the user most likely meant by w: the only one
// that starts with w, else the nearest within two edits. The distance must
// also be less than w's length, or any short word would match anything.
func closest(w string, known []string) string {
	var prefixed []string
	for _, k := range known {
		if strings.HasPrefix(k, w) {
			prefixed = append(prefixed, k)
		}
	}
	if len(prefixed) == 1 && len(w) > 1 {
		return prefixed[0]
	}
	best, bestD := "", 3
	for _, k := range known {
		if d := suggest.Distance(w, k); d < bestD && d < len(w) {
			best, bestD = k, d
		}
	}
	return best
}

// rejectArgs makes a command that names no arguments in its ArgsUsage refuse
// any, rather than silently ignore a word the user meant something by.
func rejectArgs(cmd *ucli.Command) {
	action := cmd.Action
	if cmd.ArgsUsage != "" || action == nil {
		return
	}
	cmd.Action = func(c *ucli.Context) error {
		if c.NArg() > 0 {
			return exitf(ExitUsage, "%s takes no arguments, got %q; see %s --help", cmd.Name, c.Args().First(), cmd.HelpName)
		}
		return action(c)
	}
}

// atLeastZero rejects a negative count, which would otherwise be taken
// silently and read downstream as "off".
func atLeastZero(name string) func(*ucli.Context, int) error {
	return func(_ *ucli.Context, v int) error {
		if v < 0 {
			return exitf(ExitUsage, "--%s must be 0 or more, not %d", name, v)
		}
		return nil
	}
}

func helpCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "help",
		Usage:     "show the commands, or the help of one command",
		ArgsUsage: "[COMMAND]",
		Action: func(c *ucli.Context) error {
			switch c.NArg() {
			case 0:
				return ucli.ShowAppHelp(c)
			case 1:
				name := c.Args().First()
				if cmd := c.App.Command(name); cmd == nil || cmd.Hidden {
					return unknownCommand(c.App, name)
				}
				return ucli.ShowCommandHelp(c, name)
			}
			return exitf(ExitUsage, "help takes one command, got %d words; see vibeteam help help", c.NArg())
		},
	}
}

// interrupts are the signals that stop run and resume, caught from the start
// of the command: one that arrived while the session was being created would
// otherwise kill vibeteam between taking the session's lock and saving the
// session, and leave the lock behind with nothing to resume.
//
// Until the run is attached, the first signal is noted at once and stops
// vibeteam before it creates the session; a second one exits at once, in
// case loading is stuck (an --events FIFO nobody reads). After, every signal
// goes to C for the run's watcher.
type interrupts struct {
	C chan os.Signal

	raw     chan os.Signal
	looped  chan struct{}
	streams IO

	mu       sync.Mutex
	first    os.Signal
	attached bool
}

func catchInterrupts(streams IO) *interrupts {
	in := &interrupts{C: make(chan os.Signal, 4), raw: make(chan os.Signal, 4), looped: make(chan struct{}), streams: streams}
	// SIGHUP (terminal closed) stops like SIGTERM. SIGPIPE (stdout piped to
	// a reader that went away) is caught rather than ignored, so writes fail
	// with EPIPE instead of killing vibeteam and orphaning its tasks, while
	// the children still get the default disposition.
	signal.Notify(in.raw, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go in.loop()
	return in
}

func (in *interrupts) loop() {
	defer close(in.looped)
	for s := range in.raw {
		if s == syscall.SIGPIPE {
			continue
		}
		in.mu.Lock()
		first := in.first == nil
		if first {
			in.first = s
		}
		attached := in.attached
		in.mu.Unlock()
		switch {
		case attached:
			select {
			case in.C <- s:
			default: // the watcher has more than it needs to act
			}
		case first:
			fmt.Fprintf(in.streams.Err, "vibeteam: %s: stopping before the session starts (again to quit now)\n", s)
		case in.streams.Exit != nil:
			in.streams.Exit(cmdutil.InterruptCode(in.got()))
		}
	}
}

func (in *interrupts) stop() {
	signal.Stop(in.raw) // after which nothing is sent on raw
	close(in.raw)
	<-in.looped
}

// attach hands the signals to the run's watcher, through C, and returns the
// signal that came before, if any: then there must be no run.
func (in *interrupts) attach() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.attached = true
	return in.first
}

// watch acts on the signals of a run: first at the first (stop the run
// and save), again at each later one (kill now). The returned stop ends
// the watch, once the run is over.
func (in *interrupts) watch(first func(os.Signal), again func()) (stop func()) {
	done, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		stopping := false
		for {
			select {
			case s := <-in.C:
				if !stopping {
					stopping = true
					first(s)
				} else {
					again()
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-watched
	}
}

// got is the first stopping signal, or nil.
func (in *interrupts) got() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.first
}

// warnOpenDirs makes the folders that hold sessions and logs private, and
// warns about those it cannot. A folder that is a symbolic link is refused
// (exit 2): nothing is deleted or chmod-ed through it.
func warnOpenDirs(streams IO, base string) error {
	if err := state.NewManager(base).SecureDirs(); err != nil {
		var sl *state.SymlinkError
		if errors.As(err, &sl) {
			return err // the person's to fix: it carries exit 2
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(streams.Err, "vibeteam: warning:", line)
		}
	}
	return nil
}

// egressBridge runs the bridge (egress.RunBridge): its exit code is its
// command's.
func egressBridge(args []string, streams IO) int {
	o, err := egress.ParseBridgeArgs(args)
	if err != nil {
		fmt.Fprintln(streams.Err, "vibeteam:", err)
		return ExitUsage
	}
	code, err := egress.RunBridge(o)
	if err != nil {
		fmt.Fprintln(streams.Err, "vibeteam:", err)
	}
	return code
}
