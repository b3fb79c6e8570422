package telemetry

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
)

// Session follows one run of one session: Observe takes its events, and
// it is the task tracer of its engine (TaskStarting, TaskEnded). Its
// methods may be called from many goroutines.
type Session struct {
	t       *Telemetry
	id      string
	traceID trace.TraceID

	mu     sync.Mutex
	root   *span
	stages map[int]*span
	stage  int // the stage that runs (-1: none)
	steps  map[string]*span
	gates  map[string]*span
	queues map[string]*span
	tasks  map[string]*span
	bead   string
	ended  bool
}

// span is a span handed out (its id) but not yet made: it is made when
// it ends.
type span struct {
	name   string
	id     trace.SpanID
	parent trace.SpanID // zero: the trace's root
	start  time.Time
	attrs  []attribute.KeyValue
	record *state.TaskRecord // a task's, once its attempt ended
}

// Session returns the tracer of a run of session id; nil (which does
// nothing) when t is nil.
func (t *Telemetry) Session(id string) *Session {
	if t == nil {
		return nil
	}
	return &Session{
		t: t, id: id, traceID: traceIDOf(id), stage: -1,
		root:   &span{name: SpanSession, id: newSpanID(), start: time.Now(), attrs: []attribute.KeyValue{attribute.String("vibeteam.session", id)}},
		stages: map[int]*span{}, steps: map[string]*span{}, gates: map[string]*span{}, queues: map[string]*span{}, tasks: map[string]*span{},
	}
}

// TraceParent is the W3C traceparent of the span: what a process started
// under it is given.
func (s *Session) traceParent(sp *span) string {
	return fmt.Sprintf("00-%s-%s-01", s.traceID, sp.id)
}

// TaskStarting hands the attempt of the task its span, and its agent the
// span as TRACEPARENT.
func (s *Session) TaskStarting(taskID string) map[string]string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := &span{name: SpanTask, id: newSpanID(), start: time.Now(), attrs: []attribute.KeyValue{attribute.String("vibeteam.task", taskID)}}
	s.tasks[taskID] = sp
	return map[string]string{"TRACEPARENT": s.traceParent(sp)}
}

// TaskEnded keeps what the attempt recorded, for its span, and counts its
// tokens, cost and duration.
func (s *Session) TaskEnded(taskID string, rec state.TaskRecord) {
	if s == nil {
		return
	}
	s.mu.Lock()
	sp := s.tasks[taskID]
	if sp != nil {
		sp.record = &rec
	}
	s.mu.Unlock()
	s.t.countTask(rec)
}

func (t *Telemetry) countTask(rec state.TaskRecord) {
	if t.metrics == nil {
		return
	}
	ctx := context.Background()
	adapter := attribute.String("vibeteam.adapter", rec.Adapter)
	if a := rec.Agent; a != nil {
		for _, n := range []struct {
			kind string
			v    int64
		}{{"input", a.Tokens.Input}, {"output", a.Tokens.Output}, {"cache_read", a.Tokens.CacheRead}, {"cache_write", a.Tokens.CacheWrite}} {
			if n.v > 0 {
				t.ins.tokens.Add(ctx, n.v, metric.WithAttributes(adapter, attribute.String("type", n.kind)))
			}
		}
		if a.CostUSD > 0 {
			t.ins.cost.Add(ctx, a.CostUSD, metric.WithAttributes(adapter))
		}
	}
	if rec.StartedAt != nil && rec.EndedAt != nil {
		t.ins.taskDuration.Record(ctx, rec.EndedAt.Sub(*rec.StartedAt).Seconds(),
			metric.WithAttributes(adapter, attribute.String("vibeteam.status", string(rec.Status))))
	}
}

// Observe takes one of the run's events.
func (s *Session) Observe(e state.Event) {
	if s == nil || s.t.tracer == nil && s.t.metrics == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	switch p := e.Payload.(type) {
	case events.SessionStart:
		s.root.start = e.Time
		s.root.attrs = append(s.root.attrs, attribute.String("vibeteam.workflow", p.Workflow))
	case events.SessionResume:
		s.root.start = e.Time
		s.root.attrs = append(s.root.attrs, attribute.String("vibeteam.workflow", p.Workflow), attribute.Bool("vibeteam.resumed", true))
	case events.Started:
		s.bead = p.Bead
		if p.Bead != "" {
			s.root.attrs = append(s.root.attrs, attribute.String("vibeteam.bead", p.Bead))
		}
	case events.SessionEnd:
		s.endSession(e.Time, p)
	case events.StageStart:
		s.stage = p.Index
		s.stages[p.Index] = &span{name: SpanStage, id: newSpanID(), parent: s.root.id, start: e.Time,
			attrs: []attribute.KeyValue{attribute.String("vibeteam.stage", p.Stage), attribute.Int("vibeteam.stage.index", p.Index)}}
	case events.StageEnd:
		s.finish(s.stages[p.Index], e.Time, codes.Unset, "")
		delete(s.stages, p.Index)
		s.stage = -1
	default:
		s.observeStep(e)
		s.observeTask(e)
	}
}

// observeStep takes the events of grimoire steps, merges and gates.
func (s *Session) observeStep(e state.Event) {
	switch p := e.Payload.(type) {
	case events.StepStarted:
		name := SpanStep
		if p.Type == vocab.StepMerge {
			name = SpanMerge
		}
		s.steps[p.Address] = &span{name: name, id: newSpanID(), parent: s.stepParent(p.Address), start: e.Time, attrs: []attribute.KeyValue{
			attribute.String("vibeteam.step", p.Name), attribute.String("vibeteam.step.type", string(p.Type)), attribute.String("vibeteam.address", p.Address),
			attribute.Int("vibeteam.iteration", p.Iteration),
		}}
	case events.StepCompleted:
		sp := s.steps[p.Address]
		delete(s.steps, p.Address)
		s.endQueue(p.Address, e.Time)
		if sp == nil {
			return
		}
		sp.attrs = append(sp.attrs, attribute.String("vibeteam.status", string(p.Status)), attribute.Int("vibeteam.exit_code", p.ExitCode))
		code, desc := codes.Ok, ""
		if !p.Success {
			code, desc = codes.Error, string(p.Status)
		}
		if p.Reason != "" {
			sp.attrs = append(sp.attrs, attribute.String("vibeteam.reason", p.Reason))
			desc = string(p.Status) + ": " + p.Reason
		}
		s.finish(sp, e.Time, code, desc)
	case events.MergeQueue:
		s.queues[p.Address] = &span{name: SpanMergeQueue, id: newSpanID(), parent: s.parentAt(p.Address), start: e.Time,
			attrs: []attribute.KeyValue{attribute.String("vibeteam.base", p.Base)}}
	case events.MergeDone:
		s.endQueue(p.Address, e.Time)
		if sp := s.steps[p.Address]; sp != nil {
			sp.attrs = append(sp.attrs, attribute.String("vibeteam.merge.commit", p.Commit), attribute.String("vibeteam.branch", p.Branch),
				attribute.String("vibeteam.base", p.Base), attribute.Int64("vibeteam.merge.queued_ms", p.QueuedMS))
		}
	case events.GateStart:
		s.endQueue(p.Address, e.Time)
		s.gates[gateKey(p.Address, p.Attempt)] = &span{name: SpanGate, id: newSpanID(), parent: s.parentAt(p.Address), start: e.Time, attrs: []attribute.KeyValue{
			attribute.String("vibeteam.gate.command", p.Command), attribute.Int("vibeteam.gate.attempt", p.Attempt),
			attribute.String("vibeteam.merge.commit", p.Commit), attribute.String("vibeteam.base", p.Base),
		}}
	case events.GateEnd:
		s.endGate(e.Time, p)
	}
}

func gateKey(address string, attempt int) string { return fmt.Sprintf("%s#%d", address, attempt) }

func (s *Session) endGate(at time.Time, p events.GateEnd) {
	key := gateKey(p.Address, p.Attempt)
	sp := s.gates[key]
	delete(s.gates, key)
	if m := s.t.metrics; m != nil {
		s.t.ins.gateDuration.Record(context.Background(), float64(p.DurationMS)/1000, metric.WithAttributes(attribute.Bool("vibeteam.gate.green", p.Green)))
	}
	if sp == nil {
		return
	}
	sp.attrs = append(sp.attrs, attribute.Bool("vibeteam.gate.green", p.Green), attribute.Int("vibeteam.exit_code", p.ExitCode))
	code, desc := codes.Ok, ""
	if !p.Green {
		code, desc = codes.Error, fmt.Sprintf("gate red (exit %d)", p.ExitCode)
		if p.Reason != "" {
			desc += ": " + p.Reason
		}
	}
	s.finish(sp, at, code, desc)
}

func (s *Session) endQueue(address string, at time.Time) {
	if sp := s.queues[address]; sp != nil {
		delete(s.queues, address)
		s.finish(sp, at, codes.Unset, "")
	}
}

// observeTask takes the events of a task's attempt.
func (s *Session) observeTask(e state.Event) {
	switch p := e.Payload.(type) {
	case events.TaskStart:
		sp := s.task(e.Task, e.Time)
		sp.attrs = append(sp.attrs, attribute.String("vibeteam.adapter", p.Adapter), attribute.String("vibeteam.mode", p.Mode), attribute.Int("vibeteam.pid", p.Pid))
		if s.bead != "" {
			sp.attrs = append(sp.attrs, attribute.String("vibeteam.bead", s.bead))
		}
	case events.AgentStart:
		if p.Model != "" {
			sp := s.task(e.Task, e.Time)
			sp.attrs = append(sp.attrs, attribute.String("vibeteam.model", p.Model))
		}
	case events.TaskEnd:
		sp := s.task(e.Task, e.Time)
		delete(s.tasks, e.Task)
		s.endTask(sp, e.Time, p)
	}
}

// task is the span of the task's attempt, handed out now if it was not
// (an attempt that failed to start).
func (s *Session) task(id string, at time.Time) *span {
	sp := s.tasks[id]
	if sp == nil {
		sp = &span{name: SpanTask, id: newSpanID(), start: at, attrs: []attribute.KeyValue{attribute.String("vibeteam.task", id)}}
		s.tasks[id] = sp
	}
	if !sp.parent.IsValid() {
		sp.parent = s.taskParent(id)
	}
	return sp
}

func (s *Session) endTask(sp *span, at time.Time, p events.TaskEnd) {
	sp.attrs = append(sp.attrs, attribute.String("vibeteam.status", string(p.Status)))
	if p.ExitCode != nil {
		sp.attrs = append(sp.attrs, attribute.Int("vibeteam.exit_code", *p.ExitCode))
	}
	if p.Reason != "" {
		sp.attrs = append(sp.attrs, attribute.String("vibeteam.reason", string(p.Reason)))
	}
	if rec := sp.record; rec != nil {
		if rec.Adapter != "" {
			sp.attrs = append(sp.attrs, attribute.String("vibeteam.adapter", rec.Adapter))
		}
		if a := rec.Agent; a != nil {
			sp.attrs = append(sp.attrs,
				attribute.Int64("vibeteam.tokens.input", a.Tokens.Input), attribute.Int64("vibeteam.tokens.output", a.Tokens.Output),
				attribute.Int64("vibeteam.tokens.cache_read", a.Tokens.CacheRead), attribute.Int64("vibeteam.tokens.cache_write", a.Tokens.CacheWrite),
				attribute.Float64("vibeteam.cost_usd", a.CostUSD), attribute.Int("vibeteam.tool_calls", a.ToolCalls))
		}
	}
	code, desc := codes.Ok, ""
	if p.Status != state.TaskDone {
		code, desc = codes.Error, string(p.Status)
		if p.Error != "" {
			desc += ": " + p.Error
		}
	}
	s.finish(sp, at, code, desc)
}

// taskParent is the span a task's attempt belongs to: its step's (a step's
// task is named for the step's address: name@address), or the stage that
// runs, or the session's.
func (s *Session) taskParent(id string) trace.SpanID {
	if at := strings.LastIndexByte(id, '@'); at >= 0 {
		return s.parentAt(strings.ReplaceAll(id[at+1:], "-", "/"))
	}
	if st := s.stages[s.stage]; st != nil {
		return st.id
	}
	return s.root.id
}

// parentAt is the span of the step at address, or of the nearest step
// around it.
func (s *Session) parentAt(address string) trace.SpanID {
	if sp := s.steps[address]; sp != nil {
		return sp.id
	}
	return s.stepParent(address)
}

// stepParent is the span of the step around the one at address: "2.3/0"
// is step 0 of iteration 3 of step 2, in step 2.
func (s *Session) stepParent(address string) trace.SpanID {
	for {
		slash := strings.LastIndexByte(address, '/')
		if slash < 0 {
			return s.root.id
		}
		address = address[:slash]
		if dot := strings.LastIndexByte(address, '.'); dot > strings.LastIndexByte(address, '/') {
			address = address[:dot]
		}
		if sp := s.steps[address]; sp != nil {
			return sp.id
		}
	}
}

// endSession ends the run's span, and what it left open with it.
func (s *Session) endSession(at time.Time, p events.SessionEnd) {
	for _, open := range []map[string]*span{s.tasks, s.queues, s.gates, s.steps} {
		for k, sp := range open {
			s.finish(sp, at, codes.Error, "unfinished when the run ended ("+string(p.Status)+")")
			delete(open, k)
		}
	}
	for k, sp := range s.stages {
		s.finish(sp, at, codes.Error, "unfinished when the run ended ("+string(p.Status)+")")
		delete(s.stages, k)
	}
	s.root.attrs = append(s.root.attrs, attribute.String("vibeteam.status", string(p.Status)))
	if p.Reason != "" {
		s.root.attrs = append(s.root.attrs, attribute.String("vibeteam.reason", p.Reason))
	}
	if a := p.Agents; a != nil {
		s.root.attrs = append(s.root.attrs,
			attribute.Int64("vibeteam.tokens.input", a.Tokens.Input), attribute.Int64("vibeteam.tokens.output", a.Tokens.Output),
			attribute.Float64("vibeteam.cost_usd", a.CostUSD))
	}
	code, desc := codes.Ok, ""
	if p.Status != state.StatusCompleted {
		code, desc = codes.Error, string(p.Status)
		if p.Reason != "" {
			desc += ": " + p.Reason
		}
	}
	s.finish(s.root, at, code, desc)
	s.ended = true
	if s.bead != "" && s.t.metrics != nil {
		s.t.ins.beads.Add(context.Background(), 1, metric.WithAttributes(attribute.String("vibeteam.outcome", string(p.Status))))
	}
}

// finish makes the span, now that it ended, with the ids it was handed.
func (s *Session) finish(sp *span, end time.Time, code codes.Code, desc string) {
	if sp == nil || s.t.tracer == nil {
		return
	}
	ctx := context.Background()
	if sp.parent.IsValid() {
		parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.traceID, SpanID: sp.parent, TraceFlags: trace.FlagsSampled})
		ctx = trace.ContextWithSpanContext(ctx, parent)
	}
	ctx = withPreset(ctx, s.traceID, sp.id)
	_, made := s.t.tracer.Start(ctx, sp.name, trace.WithTimestamp(sp.start), trace.WithAttributes(sp.attrs...))
	made.SetStatus(code, desc)
	made.End(trace.WithTimestamp(end))
}
