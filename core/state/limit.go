package state

import (
	"time"

	"github.com/vibeteam/vibeteam/core/vocab"
)

// StatusLimited: an agent CLI reported a usage or rate limit and the
// session stopped on it (Session.Limit says which and until when); resume
// continues the agent's own session, as after an answer.
const StatusLimited = vocab.SessionLimited

// TaskLimited: the task's agent stopped on a usage or rate limit; it runs
// again (continuing its agent's session) on resume.
const TaskLimited = vocab.TaskLimited

// Limit is the usage or rate limit a session stopped on (or waits out).
type Limit struct {
	Adapter string     `json:"adapter"`           // the adapter whose CLI reported it, e.g. "claude"
	TaskID  string     `json:"taskId"`            // the task (or agent step's task) it stopped
	ResetAt *time.Time `json:"resetAt,omitempty"` // nil when the CLI gave no reset time
	Message string     `json:"message"`           // the CLI's words
	// Waiting is set while the run waits for the reset (--wait-limits).
	Waiting bool `json:"waiting,omitempty"`
}
