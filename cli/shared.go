package cli

import (
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/cli/showcmd"
	"github.com/vibeteam/vibeteam/core/state"
)

// What every command shares is cmdutil's, for the command groups'
// packages too; these are its names in cli, which main and the tests use.

// IO is the set of streams a command uses, injected so tests can run the
// CLI in-process.
type IO = cmdutil.IO

// Exit codes (DESIGN.md §6).
const (
	ExitOK          = cmdutil.ExitOK
	ExitFailed      = cmdutil.ExitFailed
	ExitUsage       = cmdutil.ExitUsage
	ExitParked      = cmdutil.ExitParked
	ExitInterrupted = cmdutil.ExitInterrupted
)

// StdIO is the process's own streams.
func StdIO() IO { return cmdutil.StdIO() }

type exitError = cmdutil.ExitError

func exitf(code int, format string, args ...any) error { return cmdutil.Exitf(code, format, args...) }

// nextCommand is the command a person types to move a session on
// (showcmd.NextCommand).
func nextCommand(s *state.Session, running bool) string { return showcmd.NextCommand(s, running) }
