package core

import (
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
)

// What the terminal UI does to a running session: type into a task, hand
// a person its terminal, complete, park or kill.

// SendLine types text followed by Enter into a running task.
func (c *SessionController) SendLine(taskID, text string) error {
	return c.Executor.SendLine(taskID, text)
}

// TaskStatus is a task's current status.
func (c *SessionController) TaskStatus(taskID string) state.TaskStatus {
	return c.Executor.TaskStatus(taskID)
}

// Park ends the run as waiting (resumable): the person chose to leave it.
func (c *SessionController) Park(taskID, reason string) { c.Executor.Park(taskID, reason) }

// Kill SIGKILLs every running task's process group at once (a second
// interrupt).
func (c *SessionController) Kill() { c.Executor.Kill() }

// Terminal is the PTY of a running interactive task, for attaching.
func (c *SessionController) Terminal(taskID string) (*runner.Terminal, error) {
	return c.Executor.Terminal(taskID)
}

// Attached tells a task that a person has its terminal (true) or gave it
// back (false).
func (c *SessionController) Attached(taskID string, attached bool) {
	c.Executor.Attached(taskID, attached)
}
