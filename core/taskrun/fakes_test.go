package taskrun

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
)

// fakeHost is a session without an executor: it keeps one task's record,
// statuses and events, and parks by cancelling the run's context.
type fakeHost struct {
	cfg    Settings
	cancel context.CancelFunc // what Park does to the run, as an executor's park does

	mu       sync.Mutex
	rec      state.TaskRecord
	statuses []state.TaskStatus
	events   []events.Payload
	parkedAs state.Status
	parkWhy  string
	live     *Attempt
	kept     []*Attempt
}

func (h *fakeHost) Settings() Settings { return h.cfg }
func (h *fakeHost) UpdateRecord(_ string, _ bool, change func(*state.TaskRecord)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	change(&h.rec)
}
func (h *fakeHost) RecordStart(_ string, change func(*state.TaskRecord)) error {
	h.UpdateRecord("", true, change)
	return nil
}
func (h *fakeHost) ReadRecord(string) state.TaskRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rec
}
func (h *fakeHost) SetStatus(_ string, st state.TaskStatus, _ events.TaskStatusChange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.statuses = append(h.statuses, st)
	h.rec.Status = st
}
func (h *fakeHost) History(string, string, string)      {}
func (h *fakeHost) StartHistory(string, string, string) {}
func (h *fakeHost) Emit(_ string, p events.Payload) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, p)
}
func (h *fakeHost) FlushEvents() {}
func (h *fakeHost) Park(status state.Status, _ string, reason string) {
	h.mu.Lock()
	if h.parkedAs == "" {
		h.parkedAs, h.parkWhy = status, reason
	}
	h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
	}
}
func (h *fakeHost) Parked() state.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.parkedAs
}
func (h *fakeHost) SetLimit(*state.Limit)       {}
func (h *fakeHost) AllowForRun([]string)        {}
func (h *fakeHost) AllowedForRun([]string) bool { return false }
func (h *fakeHost) Running(a *Attempt)          { h.mu.Lock(); h.live = a; h.mu.Unlock() }
func (h *fakeHost) Ended(string)                { h.mu.Lock(); h.live = nil; h.mu.Unlock() }
func (h *fakeHost) Keep(a *Attempt)             { h.mu.Lock(); h.kept = append(h.kept, a); h.mu.Unlock() }
func (h *fakeHost) record() state.TaskRecord    { return h.ReadRecord("") }
func (h *fakeHost) attempt() *Attempt           { h.mu.Lock(); defer h.mu.Unlock(); return h.live }
func (h *fakeHost) status() state.TaskStatus    { return h.record().Status }
func (h *fakeHost) eventsOf(kind string) []events.Payload {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []events.Payload
	for _, p := range h.events {
		if p.Kind() == kind {
			out = append(out, p)
		}
	}
	return out
}

// fakeProgram is what a fake process does, on a goroutine of its own
// (fake time under synctest): it prints, reads its stdin, sleeps, and
// returns its exit.
type fakeProgram func(p *fakeProc) runner.Result

// fakeStarter starts fake processes: the program is chosen by the last
// argument of the command line.
type fakeStarter struct {
	programs map[string]fakeProgram
	mu       sync.Mutex
	started  []runner.Spec
}

func (f *fakeStarter) StartHeadless(spec runner.Spec, onOutput func(runner.Chunk)) (runner.Process, error) {
	prog := f.programs[spec.Args[len(spec.Args)-1]]
	if prog == nil {
		return nil, errors.New("no such program: " + strings.Join(spec.Args, " "))
	}
	f.mu.Lock()
	f.started = append(f.started, spec)
	f.mu.Unlock()
	p := &fakeProc{out: onOutput, stdin: make(chan string), done: make(chan struct{}), stop: make(chan struct{})}
	if spec.NoInput {
		p.CloseInput()
	}
	go func() {
		p.result = prog(p)
		close(p.done)
	}()
	return p, nil
}

type fakeProc struct {
	out       func(runner.Chunk)
	stdin     chan string
	closeOnce sync.Once
	done      chan struct{}
	stop      chan struct{}
	stopOnce  sync.Once
	result    runner.Result
}

// print writes s to its stdout.
func (p *fakeProc) print(s string) {
	p.out(runner.Chunk{Stream: "stdout", Raw: []byte(s), Clean: []byte(s)})
}

// sleep waits d, and reports false when the process was stopped first.
func (p *fakeProc) sleep(d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-p.stop:
		return false
	}
}

// readAll reads its stdin to EOF (false: stopped first).
func (p *fakeProc) readAll() ([]string, bool) {
	var got []string
	for {
		select {
		case s, ok := <-p.stdin:
			if !ok {
				return got, true
			}
			got = append(got, s)
		case <-p.stop:
			return got, false
		}
	}
}

// stopped is the result of a process that a signal stopped.
var stopped = runner.Result{ExitCode: -1, Signal: "terminated"}

func (p *fakeProc) Pid() int { return 0 }
func (p *fakeProc) Send(s string) error {
	select {
	case <-p.done:
		return errors.New("broken pipe")
	case p.stdin <- s:
		return nil
	}
}
func (p *fakeProc) CloseInput() error {
	p.closeOnce.Do(func() { close(p.stdin) })
	return nil
}
func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) Result() runner.Result { return p.result }
func (p *fakeProc) Kill()                 { p.Stop(0) }
func (p *fakeProc) Stop(time.Duration) {
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
}

// registry loads the adapters written as name → YAML.
func registry(t *testing.T, defs map[string]string) *adapters.Registry {
	t.Helper()
	dir := t.TempDir()
	for name, def := range defs {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(def), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reg := adapters.NewRegistry()
	if err := reg.LoadDir(dir); err != nil {
		t.Fatal(err)
	}
	return reg
}

// testBinaries are the fake programs of testdata, built once.
var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// fakeBinary is the path of testdata's fake program name, built on first
// use.
func fakeBinary(t *testing.T, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "taskrun-fakes-")
		if buildErr != nil {
			return
		}
		for _, n := range []string{"fakeline", "faketui"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, n), "../../testdata/"+n)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = errors.New(string(out))
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}
