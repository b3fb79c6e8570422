package flow

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// fakeRunner answers by step name; calls counts runs by address.
type fakeRunner struct {
	results func(name string, at Addr, call int) Result
	calls   map[string]int
	order   []string
	cancel  func(at Addr) bool // cancel the walk's context when this run starts
	stop    context.CancelFunc
}

func (f *fakeRunner) Run(ctx context.Context, s *workflow.Step, at Addr) Result {
	f.calls[at.Key()]++
	f.order = append(f.order, s.Label()+"@"+at.Key())
	if f.cancel != nil && f.cancel(at) {
		f.stop()
		return Result{Status: Stopped, Reason: "interrupted"}
	}
	return f.results(s.Label(), at, f.calls[at.Key()])
}

// fakeScope keeps what templates would see; seen records .previous and
// .loop_entry at each step's start.
type fakeScope struct {
	previous, loopEntry string
	iteration           map[string]int
	when                map[string]string // step name → "true" | "false" | "error"
	seen                []string
}

func (s *fakeScope) When(step *workflow.Step) (bool, error) {
	s.seen = append(s.seen, fmt.Sprintf("%s(prev=%s,entry=%s)", step.Label(), s.previous, s.loopEntry))
	switch s.when[step.Label()] {
	case "false":
		return false, nil
	case "error":
		return false, fmt.Errorf("step %q: when: %q renders to %q, want true or false", step.Label(), "{{.x}}", "maybe")
	}
	return true, nil
}
func (s *fakeScope) Record(step *workflow.Step, r Result) { s.previous = step.Label() }
func (s *fakeScope) EnterLoop(loop *workflow.Step)        { s.loopEntry = s.previous }
func (s *fakeScope) ExitLoop(loop *workflow.Step)         {}
func (s *fakeScope) Iteration(loop *workflow.Step, _ Addr, n int) {
	if s.iteration == nil {
		s.iteration = map[string]int{}
	}
	s.iteration[loop.Label()] = n
}

// memStore is a session's runs in memory: it survives a "crash" of the
// walk (a cancelled context) as the journal does.
type memStore struct{ runs map[string]Result }

func (m *memStore) Finished(at Addr) (Result, bool) {
	r, ok := m.runs[at.Key()]
	return r, ok && r.finished()
}
func (m *memStore) Started(at Addr, step *workflow.Step) {}
func (m *memStore) Ended(at Addr, step *workflow.Step, r Result) {
	m.runs[at.Key()] = r
}

func script(name string) workflow.Step {
	return workflow.Step{Type: workflow.StepScript, Name: name, Script: &workflow.ScriptStep{OnFail: workflow.OnFailBlock}}
}

func loop(name string, max int, onMax string, steps ...workflow.Step) workflow.Step {
	return workflow.Step{Type: workflow.StepLoop, Name: name, Loop: &workflow.LoopStep{Steps: steps, MaxIterations: max, OnMaxIterations: onMax}}
}

func newInterp(results func(string, Addr, int) Result) (*Interpreter, *fakeRunner, *fakeScope, *memStore) {
	r := &fakeRunner{results: results, calls: map[string]int{}}
	sc := &fakeScope{when: map[string]string{}}
	st := &memStore{runs: map[string]Result{}}
	in := &Interpreter{
		Runners: map[vocab.StepType]Runner{workflow.StepScript: r},
		Scope:   sc, Store: st,
		Blocks: func(s *workflow.Step) bool { return s.Script != nil && s.Script.OnFail == workflow.OnFailBlock },
	}
	return in, r, sc, st
}

func TestAddr(t *testing.T) {
	a := Addr(nil).Step(2).Iteration(3).Step(0)
	if a.Key() != "2.3/0" || a.String() != "step 2 › iteration 3 › step 0" {
		t.Errorf("key %q, string %q", a.Key(), a.String())
	}
	back, err := ParseAddr(a.Key())
	if err != nil || back.Key() != a.Key() {
		t.Errorf("ParseAddr: %v %v", back, err)
	}
	for _, bad := range []string{"x", "1.0", "-1", "1/", "1.a"} {
		if _, err := ParseAddr(bad); err == nil {
			t.Errorf("ParseAddr(%q) accepted", bad)
		}
	}
}

// A loop runs until a step exits it; each run has its own address; the
// scope sees .previous across iterations and .loop_entry throughout.
func TestLoopRunsUntilExit(t *testing.T) {
	in, r, sc, _ := newInterp(func(name string, at Addr, call int) Result {
		if name == "tests" && at[0].Iteration == 3 {
			return Result{Status: Done, ExitLoop: true}
		}
		return Result{Status: Done}
	})
	steps := []workflow.Step{script("impl"), loop("quality", 5, "", script("tests"), script("fix")), script("after")}
	out := in.Run(context.Background(), steps)
	if out.Status != Done {
		t.Fatalf("outcome %+v", out)
	}
	want := "impl@0 tests@1.1/0 fix@1.1/1 tests@1.2/0 fix@1.2/1 tests@1.3/0 after@2"
	if got := strings.Join(r.order, " "); got != want {
		t.Errorf("runs\n got %s\nwant %s", got, want)
	}
	if sc.iteration["quality"] != 3 {
		t.Errorf("iteration %d", sc.iteration["quality"])
	}
	// The first step of iteration 2 sees the last step of iteration 1 as
	// .previous; every step in the loop sees impl as .loop_entry.
	if !contains(sc.seen, "tests(prev=fix,entry=impl)") || !contains(sc.seen, "tests(prev=impl,entry=impl)") {
		t.Errorf("scopes seen: %v", sc.seen)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestLoopOutOfIterations(t *testing.T) {
	for _, c := range []struct {
		onMax string
		want  Status
		after bool
	}{
		{"", Blocked, false},
		{workflow.OnMaxBlock, Blocked, false},
		{workflow.OnMaxExit, Done, true},
		{workflow.OnMaxContinue, Done, true},
	} {
		in, r, _, _ := newInterp(func(string, Addr, int) Result { return Result{Status: Done} })
		out := in.Run(context.Background(), []workflow.Step{loop("l", 2, c.onMax, script("x")), script("after")})
		if out.Status != c.want || (r.calls["1"] == 1) != c.after {
			t.Errorf("on_max_iterations %q: outcome %+v, after ran %d", c.onMax, out, r.calls["1"])
		}
		if c.want == Blocked && !strings.Contains(out.Reason, `loop "l" ran 2 iterations`) {
			t.Errorf("reason %q", out.Reason)
		}
	}
}

func TestWhenAndFailures(t *testing.T) {
	in, r, sc, st := newInterp(func(name string, _ Addr, _ int) Result {
		if strings.HasPrefix(name, "bad") {
			return Result{Status: Failed, Reason: "exit code 1"}
		}
		return Result{Status: Done}
	})
	soft := script("bad-soft")
	soft.Script.OnFail = workflow.OnFailContinue
	sc.when["skipped"] = "false"
	out := in.Run(context.Background(), []workflow.Step{script("a"), script("skipped"), soft, script("b"), script("bad-hard"), script("never")})
	if out.Status != Blocked || out.Step != "bad-hard" || out.At.Key() != "4" {
		t.Fatalf("outcome %+v", out)
	}
	if r.calls["1"] != 0 || st.runs["1"].Status != Skipped {
		t.Errorf("a false when ran the step (%d) or was not recorded (%v)", r.calls["1"], st.runs["1"])
	}
	if r.calls["5"] != 0 {
		t.Error("a step after a blocking failure ran")
	}
	if st.runs["4"].Status != Blocked {
		t.Errorf("a blocking failure is recorded as %s; resume would replay it", st.runs["4"].Status)
	}

	// An undecidable when blocks, naming the step.
	in2, _, sc2, _ := newInterp(func(string, Addr, int) Result { return Result{Status: Done} })
	sc2.when["x"] = "error"
	if out := in2.Run(context.Background(), []workflow.Step{script("x")}); out.Status != Blocked || !strings.Contains(out.Reason, `step "x": when`) {
		t.Errorf("outcome %+v", out)
	}
}

// Interrupted mid-loop, a resumed walk runs nothing that finished, runs the
// interrupted step again, in the same iteration, with the same .previous
// and .loop_entry.
func TestResumeContinuesAtTheInterruptedStep(t *testing.T) {
	for kill := 1; kill <= 7; kill++ { // each of the 7 runs
		t.Run(fmt.Sprint(kill), func(t *testing.T) {
			results := func(name string, at Addr, _ int) Result {
				if name == "tests" && at[0].Iteration == 3 {
					return Result{Status: Done, ExitLoop: true}
				}
				return Result{Status: Done}
			}
			in, r, sc, st := newInterp(results)
			steps := []workflow.Step{script("impl"), loop("quality", 5, "", script("tests"), script("fix")), script("after")}
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			r.stop = cancel
			r.cancel = func(Addr) bool { n++; return n == kill }
			first := in.Run(ctx, steps)
			if first.Status != Stopped {
				t.Fatalf("first walk %+v", first)
			}
			interrupted := first.At.Key()
			seenAt := sc.seen[len(sc.seen)-1]

			// A new process: fresh scope and runner, the same store.
			in2, r2, sc2, _ := newInterp(results)
			in2.Store = st
			if out := in2.Run(context.Background(), steps); out.Status != Done {
				t.Fatalf("resumed walk %+v", out)
			}
			for key := range r2.calls {
				if key != interrupted && r.calls[key] > 0 {
					t.Errorf("step %s finished before the interruption and ran again", key)
				}
			}
			if r2.calls[interrupted] != 1 {
				t.Errorf("the interrupted step %s ran %d times on resume", interrupted, r2.calls[interrupted])
			}
			if !contains(sc2.seen, seenAt) {
				t.Errorf("resumed scope differs at %s: want %s among %v", interrupted, seenAt, sc2.seen)
			}
			if got := len(r.order) - 1 + len(r2.order); got != 7 {
				t.Errorf("%d runs in all (minus the interrupted one), want 7: %v then %v", got, r.order, r2.order)
			}
		})
	}
}
