// Package ui is vibeteam's terminal UI: the live board of a run, the
// backlog's board, the prompts of a task that waits for a person, and the
// one event formatter both the live display and `vibeteam log` print
// with. It renders the typed events core emits; it decides no exit codes
// and runs no command.
package ui

import "io"

// Streams are where the UI writes: Out for what a command outputs, Err for
// the board and the status lines, and whether Err is a terminal.
type Streams struct {
	Out    io.Writer
	Err    io.Writer
	ErrTTY bool
}
