package ui

import (
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// mark is how a status shows at a glance: one column wide, and the SGR
// colour the live display paints it in ("" for none).
type mark struct{ glyph, colour string }

const (
	green, red, yellow, cyan = "32", "31", "33", "36"
)

// The one table of glyphs and colours: a task's, a step's and a
// session's statuses. A status not in it shows as its type's fallback.
var (
	taskMarks = map[vocab.TaskStatus]mark{
		vocab.TaskDone:           {"✓", green},
		vocab.TaskError:          {"✗", red},
		vocab.TaskWaitingForUser: {"?", yellow},
		vocab.TaskRunning:        {"●", cyan},
	}
	stepMarks = map[vocab.StepStatus]mark{
		vocab.StepDone:    {"✓", green},
		vocab.StepFailed:  {"✗", red},
		vocab.StepSkipped: {"–", ""},
		vocab.StepBlocked: {"⊘", red},
		vocab.StepStopped: {"■", yellow},
		vocab.StepWaiting: {"…", yellow},
		vocab.StepRunning: {"●", cyan},
	}
	sessionMarks = map[vocab.SessionStatus]mark{
		vocab.SessionCompleted: {"✓", green},
		vocab.SessionFailed:    {"✗", red},
		vocab.SessionBlocked:   {"⊘", red},
		vocab.SessionCancelled: {"■", yellow},
	}
)

func taskMark(s vocab.TaskStatus) mark {
	if m, ok := taskMarks[s]; ok {
		return m
	}
	return mark{glyph: "·"}
}

func stepMark(s vocab.StepStatus) mark {
	if m, ok := stepMarks[s]; ok {
		return m
	}
	return mark{glyph: "?"}
}

func sessionMark(s vocab.SessionStatus) mark {
	if m, ok := sessionMarks[s]; ok {
		return m
	}
	return mark{glyph: "·"}
}

// showing is the task status whose mark a step run's status (show) or a
// bead's (the backlog's board) shows with.
var (
	stepShowsAs = map[vocab.StepStatus]vocab.TaskStatus{
		vocab.StepDone:    vocab.TaskDone,
		vocab.StepFailed:  vocab.TaskError,
		vocab.StepBlocked: vocab.TaskError,
		vocab.StepRunning: vocab.TaskRunning,
		vocab.StepWaiting: vocab.TaskWaitingForUser,
	}
	beadShowsAs = map[string]vocab.TaskStatus{
		string(vocab.SessionCompleted): vocab.TaskDone,
		string(vocab.SessionFailed):    vocab.TaskError,
		string(vocab.SessionRunning):   vocab.TaskRunning,
		state.BeadStarting:             vocab.TaskRunning,
		state.BeadSkipped:              vocab.TaskPending,
		string(vocab.SessionCancelled): vocab.TaskPending,
	}
)

// stepRunMark is a step run's mark in show: its task status's.
func stepRunMark(s vocab.StepStatus) mark {
	if t, ok := stepShowsAs[s]; ok {
		return taskMark(t)
	}
	return taskMark(vocab.TaskPending)
}

// beadMark is a bead's mark on the backlog's board: its task status's;
// any other status (waiting, blocked, a merge pending) asks for a person.
func beadMark(status string) mark {
	if t, ok := beadShowsAs[status]; ok {
		return taskMark(t)
	}
	return taskMark(vocab.TaskWaitingForUser)
}

// BeadGlyph is a bead's glyph on the backlog's board and in its status.
func BeadGlyph(status string) string { return beadMark(status).glyph }

// StepRunGlyph is a step run's glyph in show.
func StepRunGlyph(s vocab.StepStatus) string { return stepRunMark(s).glyph }
