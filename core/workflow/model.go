// Package workflow holds the one model both file kinds load into (stage
// workflows and, later, grimoires), its loader and its validation.
package workflow

import (
	"encoding/json"
	"fmt"
	"time"
)

// Kinds of definition files. Both load into Definition: a stage workflow is a
// list of steps of type "stage".
const (
	KindStages   = "stages"
	KindGrimoire = "grimoire"
)

// Step types. Only StepStage is executed today; grimoire steps (agent, script,
// loop, merge) are added to this list as they land.
const (
	StepStage = "stage"
)

// Execution modes of a task.
const (
	ModeInteractive = "interactive"
	ModeHeadless    = "headless"
)

// Pos is a position in a source file. The zero Pos means "unknown" (for
// example a definition reloaded from a session file).
type Pos struct {
	File string `json:"-"`
	Line int    `json:"-"`
	Col  int    `json:"-"`
}

func (p Pos) String() string {
	switch {
	case p.File == "" && p.Line == 0:
		return ""
	case p.Line == 0:
		return p.File
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Definition is a loaded workflow of either kind.
type Definition struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Goal   string `json:"goal,omitempty"`
	Source string `json:"source,omitempty"` // the file it was loaded from, if any
	Steps  []Step `json:"steps"`
}

// Step is one element of a definition's body. A stage holds tasks that run in
// parallel.
type Step struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Tasks []Task `json:"tasks,omitempty"`
	Pos   Pos    `json:"-"`
}

// Task is one agent process.
type Task struct {
	ID            string            `json:"id"`
	Adapter       string            `json:"adapter"`
	ExecutionMode string            `json:"executionMode"` // always normalised: interactive | headless
	Prompt        string            `json:"prompt,omitempty"`
	ExtraArgs     []string          `json:"extraArgs,omitempty"`
	Cwd           string            `json:"cwd,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Name          string            `json:"name,omitempty"`
	PendingInputs []string          `json:"pendingInputs,omitempty"`
	KeepAlive     bool              `json:"keepAlive,omitempty"`
	Timeout       Duration          `json:"timeout,omitempty"`
	// InactivityTimeout fails the task after this long without output; it
	// overrides the adapter's.
	InactivityTimeout Duration `json:"inactivityTimeout,omitempty"`
	Pos               Pos      `json:"-"`
}

// DisplayName is the task's name, defaulting to its id.
func (t Task) DisplayName() string {
	if t.Name != "" {
		return t.Name
	}
	return t.ID
}

// Stages returns the steps of type stage, in order.
func (d *Definition) Stages() []Step {
	var out []Step
	for _, s := range d.Steps {
		if s.Type == StepStage {
			out = append(out, s)
		}
	}
	return out
}

// Duration is a time.Duration written as "90s", "10m", "1h30m" in files and
// in session JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return err
		}
		*d = Duration(time.Duration(n * float64(time.Second)))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
