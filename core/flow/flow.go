// Package flow is the interpreter of a definition's steps: it walks them in
// order, recursively into loops, runs each through the runner of its type,
// and records every run by its address, so that a resumed session continues
// at exactly the step that was interrupted. Stage workflows (a list of stage
// steps) and grimoires (agent, script, loop, stage steps) run through it
// alike.
package flow

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Frame is one level of an address: the step's index among its siblings,
// and, for the steps of a loop, the loop's iteration (from 1; 0 outside
// loops).
type Frame struct {
	Index     int
	Iteration int
}

// Addr is where a step run is: the path of frames from the top. The run of
// step 0 in iteration 3 of the loop that is step 2 is {2,3}/{0,0}, keyed
// "2.3/0".
type Addr []Frame

// Step is the address of the i-th step under a.
func (a Addr) Step(i int) Addr {
	return append(append(Addr(nil), a...), Frame{Index: i})
}

// Iteration is a (the address of a loop) in its n-th iteration: the parent
// of the iteration's steps.
func (a Addr) Iteration(n int) Addr {
	out := append(Addr(nil), a...)
	out[len(out)-1].Iteration = n
	return out
}

// Key is the address as a string, for maps and files.
func (a Addr) Key() string {
	var b strings.Builder
	for i, f := range a {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(strconv.Itoa(f.Index))
		if f.Iteration > 0 {
			b.WriteByte('.')
			b.WriteString(strconv.Itoa(f.Iteration))
		}
	}
	return b.String()
}

// String is the address for people: "step 2 › iteration 3 › step 0".
func (a Addr) String() string {
	var parts []string
	for _, f := range a {
		parts = append(parts, "step "+strconv.Itoa(f.Index))
		if f.Iteration > 0 {
			parts = append(parts, "iteration "+strconv.Itoa(f.Iteration))
		}
	}
	return strings.Join(parts, " › ")
}

// ParseAddr reads a Key back.
func ParseAddr(key string) (Addr, error) {
	if key == "" {
		return nil, nil
	}
	var a Addr
	for _, part := range strings.Split(key, "/") {
		idx, iter, _ := strings.Cut(part, ".")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("bad address %q", key)
		}
		f := Frame{Index: i}
		if iter != "" {
			if f.Iteration, err = strconv.Atoi(iter); err != nil || f.Iteration < 1 {
				return nil, fmt.Errorf("bad address %q", key)
			}
		}
		a = append(a, f)
	}
	return a, nil
}

// SortKeys sorts address keys in walk order: frame by frame, numerically
// ("2.10" after "2.9"), a parent before its children.
func SortKeys(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		a, _ := ParseAddr(keys[i])
		b, _ := ParseAddr(keys[j])
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k].Index != b[k].Index {
				return a[k].Index < b[k].Index
			}
			if a[k].Iteration != b[k].Iteration {
				return a[k].Iteration < b[k].Iteration
			}
		}
		return len(a) < len(b)
	})
}

// ErrTimeout is the cause of a context whose step (a loop, a stage) or
// workflow ran out of time; the step running then is blocked, not failed.
var ErrTimeout = errors.New("timeout")

// WithTimeout limits ctx to the step's timeout, if it has one.
func WithTimeout(ctx context.Context, s *workflow.Step) (context.Context, context.CancelFunc) {
	if s.Timeout <= 0 {
		return ctx, func() {}
	}
	d := time.Duration(s.Timeout)
	return context.WithTimeoutCause(ctx, d, fmt.Errorf("%w: %s %q ran longer than its %s", ErrTimeout, s.Type, s.Label(), d))
}

// Status of one step run (vocab's; see vocab.StepStatus for each).
type Status = vocab.StepStatus

const (
	Done    = vocab.StepDone
	Failed  = vocab.StepFailed
	Skipped = vocab.StepSkipped
	Blocked = vocab.StepBlocked
	Stopped = vocab.StepStopped
	Waiting = vocab.StepWaiting
	Limited = vocab.StepLimited
)

// Result is how one step run ended.
type Result struct {
	Status   Status         `json:"status"`
	Output   string         `json:"output,omitempty"`
	Outputs  map[string]any `json:"outputs,omitempty"`
	Summary  string         `json:"summary,omitempty"`
	ExitCode int            `json:"exit_code"`
	// ChangedFiles are the files an agent step changed (from git).
	ChangedFiles []string `json:"changed_files,omitempty"`
	// LogPath is the file holding the step's whole output.
	LogPath string `json:"log_path,omitempty"`
	// ExitLoop leaves the enclosing loop (a script's on_success: exit_loop).
	ExitLoop bool `json:"exit_loop,omitempty"`
	// Reason says why a run failed, blocked or stopped.
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
}

// finished runs are replayed on resume; the others run again.
func (r Result) finished() bool { return r.Status == Done || r.Status == Failed || r.Status == Skipped }

// Runner runs the steps of one type.
type Runner interface {
	Run(ctx context.Context, step *workflow.Step, at Addr) Result
}

// Scope is what templates see; the interpreter tells it what happened.
type Scope interface {
	// When evaluates the step's condition (true when it has none).
	When(step *workflow.Step) (bool, error)
	// Record makes a finished step's result readable (by name, by alias,
	// and as .previous).
	Record(step *workflow.Step, r Result)
	// EnterLoop is called before a loop's first iteration (.loop_entry is
	// what was .previous then); Iteration before each iteration.
	EnterLoop(loop *workflow.Step)
	Iteration(loop *workflow.Step, at Addr, n int)
	// ExitLoop is called when a loop has ended and the walk goes on after
	// it (.previous is then the last step run in it).
	ExitLoop(loop *workflow.Step)
}

// Store checkpoints runs by address.
type Store interface {
	// Finished returns the result of a run that finished earlier (resume).
	Finished(at Addr) (Result, bool)
	// Started and Ended record a run; Ended is durable.
	Started(at Addr, step *workflow.Step)
	Ended(at Addr, step *workflow.Step, r Result)
}

// Pruner is a Store that drops the runs of a loop's old iterations to stay
// bounded: a resumed walk passes over those iterations, which finished.
type Pruner interface {
	// PrunedThrough is the last iteration of the loop at whose runs were
	// dropped (0: none).
	PrunedThrough(loop Addr) int
}

// Outcome is how a walk ended.
type Outcome struct {
	Status Status // Done (the end was reached), Failed, Blocked, Stopped or Waiting
	At     Addr   // the step that ended it, when it did not complete
	Step   string
	Reason string
}

// Interpreter walks steps.
type Interpreter struct {
	Runners map[vocab.StepType]Runner
	Scope   Scope
	Store   Store
	// Blocks decides what a failed run of a step does: true blocks the
	// workflow (it stops, resumable, the step runs again), false goes on to
	// the next step. Nil (stage workflows): a failure fails the workflow.
	Blocks func(step *workflow.Step) bool
}

// Run walks steps from the top. Finished runs recorded in the store are not
// run again: their results are replayed into the scope, so a resumed walk
// continues at the interrupted step with the same .previous, .loop_entry
// and iteration.
func (in *Interpreter) Run(ctx context.Context, steps []workflow.Step) Outcome {
	out, _ := in.steps(ctx, steps, nil)
	return out
}

// steps runs a list of sibling steps under parent; exitLoop reports a run
// that asked to leave the enclosing loop.
func (in *Interpreter) steps(ctx context.Context, steps []workflow.Step, parent Addr) (out Outcome, exitLoop bool) {
	for i := range steps {
		s := &steps[i]
		at := parent.Step(i)
		if s.Type == workflow.StepLoop {
			out := in.loop(ctx, s, at)
			if out.Status != Done {
				return out, false
			}
			continue
		}
		r, ok := in.Store.Finished(at)
		if !ok {
			if err := ctx.Err(); err != nil {
				if cause := context.Cause(ctx); errors.Is(cause, ErrTimeout) {
					// Out of time between two steps: the next one is where
					// the walk is blocked.
					in.Store.Ended(at, s, Result{Status: Blocked, Reason: cause.Error()})
					return Outcome{Status: Blocked, At: at, Step: s.Label(), Reason: cause.Error()}, false
				}
				return Outcome{Status: Stopped, At: at, Step: s.Label(), Reason: "interrupted"}, false
			}
			r = in.run(ctx, s, at)
		}
		switch r.Status {
		case Done, Skipped:
		case Failed:
			if in.Blocks == nil {
				return Outcome{Status: Failed, At: at, Step: s.Label(), Reason: r.Reason}, false
			}
			// on_fail: continue; {{.previous.failed}} tells the next step.
		default: // Blocked, Stopped, Waiting: run again on resume
			return Outcome{Status: r.Status, At: at, Step: s.Label(), Reason: r.Reason}, false
		}
		if r.Status != Skipped {
			in.Scope.Record(s, r)
		}
		if r.ExitLoop {
			return Outcome{Status: Done}, true
		}
	}
	return Outcome{Status: Done}, false
}

// run runs one (non-loop) step now and records it.
func (in *Interpreter) run(ctx context.Context, s *workflow.Step, at Addr) Result {
	ok, err := in.Scope.When(s)
	if err != nil {
		// A condition that cannot be decided is the workflow's error, not
		// the step's: it blocks whatever on_fail says.
		r := Result{Status: Blocked, Reason: err.Error()}
		in.Store.Ended(at, s, r)
		return r
	}
	if !ok {
		r := Result{Status: Skipped}
		in.Store.Ended(at, s, r)
		return r
	}
	runner := in.Runners[s.Type]
	if runner == nil {
		r := Result{Status: Blocked, Reason: fmt.Sprintf("no runner for %s steps", s.Type)}
		in.Store.Ended(at, s, r)
		return r
	}
	in.Store.Started(at, s)
	start := time.Now()
	r := runner.Run(ctx, s, at)
	if r.Duration == 0 {
		r.Duration = time.Since(start)
	}
	if r.Status == Failed && in.Blocks != nil && in.Blocks(s) {
		// Recorded as blocked, not failed: a resume runs it again rather
		// than replaying its failure.
		r.Status = Blocked
	}
	in.Store.Ended(at, s, r)
	return r
}

// loop runs a loop's iterations until a step exits it or max_iterations
// have run; then on_max_iterations decides.
func (in *Interpreter) loop(ctx context.Context, s *workflow.Step, at Addr) Outcome {
	// A loop is always walked: on resume, its finished inner runs are
	// replayed (for the scope), never run again.
	ok, err := in.Scope.When(s)
	if err != nil {
		return Outcome{Status: Blocked, At: at, Step: s.Label(), Reason: err.Error()}
	}
	if !ok {
		in.Store.Ended(at, s, Result{Status: Skipped})
		return Outcome{Status: Done}
	}
	l := s.Loop
	max := l.MaxIterations
	if max <= 0 {
		max = workflow.DefaultMaxIterations
	}
	in.Scope.EnterLoop(s)
	in.Store.Started(at, s)
	ctx, cancel := WithTimeout(ctx, s)
	defer cancel()
	pruned := 0
	if p, ok := in.Store.(Pruner); ok {
		pruned = p.PrunedThrough(at)
	}
	for n := 1; n <= max; n++ {
		in.Scope.Iteration(s, at, n)
		if n <= pruned {
			continue // finished, and only counted now
		}
		out, exit := in.steps(ctx, l.Steps, at.Iteration(n))
		if out.Status != Done {
			return out
		}
		if exit {
			in.Scope.ExitLoop(s)
			in.Store.Ended(at, s, Result{Status: Done, Summary: fmt.Sprintf("exited in iteration %d", n)})
			return Outcome{Status: Done}
		}
	}
	why := fmt.Sprintf("loop %q ran %d iterations without a step exiting it", s.Label(), max)
	switch l.OnMaxIterations {
	case workflow.OnMaxExit, workflow.OnMaxContinue:
		in.Scope.ExitLoop(s)
		in.Store.Ended(at, s, Result{Status: Done, Summary: why})
		return Outcome{Status: Done}
	default:
		in.Store.Ended(at, s, Result{Status: Blocked, Reason: why})
		return Outcome{Status: Blocked, At: at, Step: s.Label(), Reason: why}
	}
}
