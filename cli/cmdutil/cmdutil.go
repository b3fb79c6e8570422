// Package cmdutil holds what every command of the vibeteam CLI shares, as
// gh's pkg/cmdutil does: the streams a command writes to, its exit codes
// and the error that carries one, and the flags and arguments most
// commands take (--base-dir, a session id). The command groups' packages
// (cli/...) and cli itself import it; it imports no command.
package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/mattn/go-isatty"
	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/ui"
)

// Exit codes (DESIGN.md §6; vocab's, which errors of core carry too).
const (
	ExitOK          = vocab.ExitOK
	ExitFailed      = vocab.ExitFailed
	ExitUsage       = vocab.ExitUsage
	ExitParked      = vocab.ExitParked
	ExitInterrupted = vocab.ExitInterrupted
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
	// Exit ends the process at once, for a second interrupt before a run
	// has anything to clean up; nil (in-process tests) never exits.
	Exit func(code int)
}

// StdIO is the process's own streams.
func StdIO() IO {
	return IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrTTY: isatty.IsTerminal(os.Stderr.Fd()), OpenTTY: ui.OpenTTY, Exit: os.Exit}
}

// UI is where the terminal UI writes.
func (s IO) UI() ui.Streams { return ui.Streams{Out: s.Out, Err: s.Err, ErrTTY: s.ErrTTY} }

// Coder is an error that carries its exit code (go-task's pattern):
// ExitError, and the errors of core that are the person's to fix
// (vocab.UsageError, a file's error at a line, a session another process
// holds). Main exits with the code of the first one in an error's chain.
type Coder interface {
	error
	Code() int
}

// ExitError is an exit code a command chose, with what to print: Main
// prints Msg (if any) and exits with Exit.
type ExitError struct {
	Exit int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

// Code is the exit code the command chose.
func (e *ExitError) Code() int { return e.Exit }

// Exitf is an error that ends the command with code and the message.
func Exitf(code int, format string, args ...any) error {
	return &ExitError{Exit: code, Msg: fmt.Sprintf(format, args...)}
}

// ExitCode is the exit status an error ends a command with: the code of
// the first Coder in its chain, else ExitUsage (what urfave/cli itself
// rejects: an unknown flag, a bad value).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var coded Coder
	if errors.As(err, &coded) {
		return coded.Code()
	}
	return ExitUsage
}

// BaseDirFlag is --base-dir, global and on every command that reads a project.
var BaseDirFlag = &ucli.StringFlag{Name: "base-dir", Usage: "project directory holding .vibeteam/ (default: the git top-level, else the current directory)", EnvVars: []string{"VIBETEAM_BASE_DIR"}}

// SessionLoadError turns a failed session load into a message that helps.
func SessionLoadError(err error) error {
	var nf *state.NotFoundError
	if errors.As(err, &nf) {
		msg := fmt.Sprintf("no session %q", nf.ID)
		if len(nf.Nearest) > 0 {
			msg += "; nearest: " + strings.Join(nf.Nearest, ", ")
		} else {
			msg += " (vibeteam sessions lists them)"
		}
		return Exitf(ExitUsage, "%s", msg)
	}
	return Exitf(ExitUsage, "%v", err)
}

// SessionArg is the session a command that takes one ID argument names:
// the base dir's sessions and the id (ResolveSession), or a usage error.
func SessionArg(c *ucli.Context) (*state.Manager, string, error) {
	if c.NArg() != 1 {
		return nil, "", Exitf(ExitUsage, "%s needs a session id (see vibeteam sessions)", c.Command.Name)
	}
	base, err := BaseDir(c)
	if err != nil {
		return nil, "", err
	}
	mgr := state.NewManager(base)
	id, err := ResolveSession(mgr, c.Args().First())
	if err != nil {
		return nil, "", err
	}
	return mgr, id, nil
}

// ResolveSession maps the ID argument of a command, a whole id or a unique
// prefix, to a session id.
func ResolveSession(mgr *state.Manager, arg string) (string, error) {
	id, err := mgr.Resolve(arg)
	var amb *state.AmbiguousError
	switch {
	case err == nil:
		return id, nil
	case errors.As(err, &amb):
		return "", Exitf(ExitUsage, "%v; type more of the id", err)
	}
	return "", SessionLoadError(err)
}

// BaseDir is --base-dir, else the git top-level of the current directory,
// else the current directory.
func BaseDir(c *ucli.Context) (string, error) {
	d := ""
	// The flag exists globally and per command; whichever was given wins.
	for _, ctx := range c.Lineage() {
		if ctx.IsSet("base-dir") {
			d = ctx.String("base-dir")
			break
		}
	}
	return FindBaseDir(d)
}

// FindBaseDir is BaseDir for a --base-dir value, "" when none was given.
func FindBaseDir(d string) (string, error) {
	if d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", Exitf(ExitUsage, "--base-dir %s is not a directory", d)
		}
		return abs, nil
	}
	// The git top-level, found as git finds it (the nearest directory up
	// that holds a repository's .git), without starting git: every
	// command, preview included, starts no process.
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isGitDir(filepath.Join(d, ".git")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return wd, nil
		}
	}
}

// isGitDir reports whether path is a .git git takes for a repository's: a
// directory with a HEAD in it, or a file that says "gitdir: ..." (a
// worktree's, a submodule's). An empty .git directory some tool left (in
// the system's temporary directory, say) is not one, and must not make
// every directory below it one repository.
func isGitDir(path string) bool {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return false
	case fi.IsDir():
		head, err := os.Stat(filepath.Join(path, "HEAD"))
		return err == nil && !head.IsDir()
	case fi.Mode().IsRegular():
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		b := make([]byte, len("gitdir:"))
		n, _ := io.ReadFull(f, b)
		return string(b[:n]) == "gitdir:"
	}
	return false
}

// LoadRegistry returns the built-in adapters plus the user's adapter files;
// a bad adapter file is a validation error.
func LoadRegistry(base string) (*adapters.Registry, error) {
	reg := adapters.NewRegistry()
	if err := reg.LoadDir(filepath.Join(base, ".vibeteam", "adapters")); err != nil {
		return nil, err
	}
	return reg, nil
}

// InterruptCode is the conventional 128+n exit code of a stopping signal.
func InterruptCode(s os.Signal) int {
	switch s {
	case syscall.SIGTERM:
		return 143
	case syscall.SIGHUP:
		return 129
	}
	return ExitInterrupted
}

// BDTimeout bounds one bd call.
const BDTimeout = 30 * time.Second

// TakesValue reports whether the flag named by arg (e.g. "--set") expects a
// separate value argument.
func TakesValue(flags []ucli.Flag, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, isBool := f.(*ucli.BoolFlag); isBool {
				return false
			}
			return true
		}
	}
	return false
}

// Dashed is a flag's name as it is typed: -x, --name.
func Dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
