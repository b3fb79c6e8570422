package vocab

// Exit codes (DESIGN.md §6): how a command ends for the shell.
//
// An error that knows what it means for the person who typed the command
// carries its code, as go-task's errors do: a method Code() int. A bad
// file, a session held by another process or a resume that cannot be are
// usage errors (exit 2) wherever they are found; the CLI's Main maps an
// error to its exit status once, and a command chooses a code itself only
// where the code is its own decision (a session that parked, failed or was
// interrupted).
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitParked      = 3
	ExitInterrupted = 130 // SIGINT; SIGTERM gives 143
)

// UsageError is an error that is the person's to fix (exit 2), with the
// cause it wraps.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Code is ExitUsage.
func (e *UsageError) Code() int { return ExitUsage }
