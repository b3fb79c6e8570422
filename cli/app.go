// Package cli is the vibeteam command line: one file per command, plus the
// terminal UI (status board, pauses). It is the only package that prints.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mattn/go-isatty"
	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
)

// Exit codes (DESIGN.md §6).
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitParked      = 3
	ExitInterrupted = 130 // SIGINT; SIGTERM gives 143
)

// IO is the set of streams a command uses, injected so tests can run the
// CLI in-process.
type IO struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	ErrTTY bool // stderr is a terminal: draw the live status board
	// OpenTTY opens the controlling terminal for pauses; nil means there is
	// none (tests, CI).
	OpenTTY func() (*os.File, error)
}

// StdIO is the process's own streams.
func StdIO() IO {
	return IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrTTY: isatty.IsTerminal(os.Stderr.Fd()), OpenTTY: openTTY}
}

// exitError carries an exit code through urfave/cli.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// Main runs the CLI and returns the process exit code.
func Main(args []string, streams IO) int {
	app := newApp(streams)
	err := app.Run(interspersed(args, app))
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(streams.Err, "vibeteam:", ee.msg)
		}
		return ee.code
	}
	// Anything urfave/cli itself rejects (unknown flag, bad value) is usage.
	fmt.Fprintln(streams.Err, "vibeteam:", err)
	return ExitUsage
}

func newApp(streams IO) *ucli.App {
	app := &ucli.App{
		Name:  "vibeteam",
		Usage: "run AI coding agents as a team, one workflow per invocation",
		Description: `vibeteam runs a stage workflow: stages in order, the tasks of a stage in
parallel, each task an agent CLI (claude, codex, gemini, opencode, shell, or
any adapter file in .vibeteam/adapters). Every state change is saved to
.vibeteam/sessions/<id>.json, so any run can be resumed.

Interactive tasks run in a pseudo-terminal; when one needs a person and no
--auto-approve policy answers, vibeteam asks at the terminal (or parks the
session when there is none).

Exit codes: 0 completed, 1 failed, 2 usage or validation error,
3 parked (resumable), 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP).

Try it:  vibeteam run demo`,
		Reader:          streams.In,
		Writer:          streams.Out,
		ErrWriter:       streams.Err,
		HideHelpCommand: true,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "base-dir", Usage: "project directory holding .vibeteam/ (default: the git top-level, else the current directory)", EnvVars: []string{"VIBETEAM_BASE_DIR"}},
		},
		Commands: []*ucli.Command{
			runCommand(streams),
			resumeCommand(streams),
			validateCommand(streams),
			sessionsCommand(streams),
			showCommand(streams),
			adaptersCommand(streams),
		},
		ExitErrHandler: func(*ucli.Context, error) {}, // Main maps errors to codes
		OnUsageError: func(c *ucli.Context, err error, _ bool) error {
			return exitf(ExitUsage, "%v (see vibeteam %s --help)", err, c.Command.Name)
		},
	}
	return app
}

// baseDir is --base-dir, else the git top-level of the current directory,
// else the current directory.
func baseDir(c *ucli.Context) (string, error) {
	d := ""
	// The flag exists globally and per command; whichever was given wins.
	for _, ctx := range c.Lineage() {
		if ctx.IsSet("base-dir") {
			d = ctx.String("base-dir")
			break
		}
	}
	if d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", exitf(ExitUsage, "--base-dir %s is not a directory", d)
		}
		return abs, nil
	}
	if out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output(); err == nil {
		if top := strings.TrimSpace(string(out)); top != "" {
			return top, nil
		}
	}
	return os.Getwd()
}

// loadRegistry returns the built-in adapters plus the user's adapter files;
// a bad adapter file is a validation error.
func loadRegistry(base string) (*adapters.Registry, error) {
	reg := adapters.NewRegistry()
	if err := reg.LoadDir(filepath.Join(base, ".vibeteam", "adapters")); err != nil {
		return nil, exitf(ExitUsage, "%v", err)
	}
	return reg, nil
}
