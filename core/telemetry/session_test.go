package telemetry

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
)

func recording(t *testing.T) (*Telemetry, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(presetIDs{}))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return &Telemetry{tracer: tp.Tracer("test"), traces: tp}, rec
}

// tree renders the ended spans as "name(key)<parent name(key)", sorted
// as they ended, naming each by its vibeteam.step, stage or task.
func tree(spans []sdktrace.ReadOnlySpan) []string {
	label := map[string]string{}
	for _, s := range spans {
		l := s.Name()
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "vibeteam.step", "vibeteam.stage", "vibeteam.task":
				l += "(" + kv.Value.AsString() + ")"
			}
		}
		label[s.SpanContext().SpanID().String()] = l
	}
	var out []string
	for _, s := range spans {
		out = append(out, label[s.SpanContext().SpanID().String()]+"<"+label[s.Parent().SpanID().String()])
	}
	return out
}

func feed(s *Session, payloads ...any) {
	at := time.Unix(1000, 0)
	for _, p := range payloads {
		at = at.Add(time.Second)
		switch p := p.(type) {
		case string: // a task's attempt: "start ID" or "end ID"
			verb, id, _ := strings.Cut(p, " ")
			if verb == "start" {
				s.TaskStarting(id)
				s.Observe(state.Event{Time: at, Task: id, Payload: events.TaskStart{Adapter: "shell"}})
			} else {
				s.TaskEnded(id, state.TaskRecord{Adapter: "shell"})
				s.Observe(state.Event{Time: at, Task: id, Payload: events.TaskEnd{Status: "DONE"}})
			}
		case events.Payload:
			s.Observe(state.Event{Time: at, Payload: p})
		}
	}
}

// A stage workflow's tasks are in their stage, the stages in the session.
func TestStageWorkflowTree(t *testing.T) {
	tel, rec := recording(t)
	s := tel.Session("s1")
	feed(s, events.SessionStart{Workflow: "w"},
		events.StageStart{Index: 0, Stage: "plan"}, "start a", "start b", "end b", "end a", events.StageEnd{Index: 0, Stage: "plan"},
		events.StageStart{Index: 1, Stage: "build"}, "start c", "end c", events.StageEnd{Index: 1, Stage: "build"},
		events.SessionEnd{Status: "completed"})
	got := strings.Join(tree(rec.Ended()), " ")
	want := "vibeteam.task(b)<vibeteam.stage(plan) vibeteam.task(a)<vibeteam.stage(plan) vibeteam.stage(plan)<vibeteam.session " +
		"vibeteam.task(c)<vibeteam.stage(build) vibeteam.stage(build)<vibeteam.session vibeteam.session<"
	if got != want {
		t.Errorf("tree:\n got %s\nwant %s", got, want)
	}
}

// A grimoire's steps nest as their addresses do: a loop's iterations'
// steps are in the loop, a stage step's tasks in the stage step, an agent
// step's task in its step; a step started but never completed ends with
// the session, unfinished.
func TestGrimoireTree(t *testing.T) {
	tel, rec := recording(t)
	s := tel.Session("s2")
	feed(s, events.SessionStart{Workflow: "g"},
		events.StepStarted{Address: "0", Name: "loop", Type: "loop"},
		events.StepStarted{Address: "0.1/0", Name: "impl", Type: "agent"}, "start impl@0.1-0", "end impl@0.1-0",
		events.StepCompleted{Address: "0.1/0", Name: "impl", Type: "agent", Status: "done", Success: true},
		events.StepStarted{Address: "0.1/1", Name: "review", Type: "stage"}, "start x@0.1-1", "end x@0.1-1",
		events.StepCompleted{Address: "0.1/1", Name: "review", Type: "stage", Status: "done", Success: true},
		events.StepCompleted{Address: "0", Name: "loop", Type: "loop", Status: "done", Success: true},
		events.StepStarted{Address: "1", Name: "merge", Type: "merge"},
		events.MergeQueue{Address: "1", Step: "merge"},
		events.GateStart{Address: "1", Step: "merge", Attempt: 1}, events.GateEnd{Address: "1", Step: "merge", Attempt: 1, Green: false, ExitCode: 1},
		events.StepStarted{Address: "2", Name: "never", Type: "script"},
		events.SessionEnd{Status: "blocked", Reason: "merge_gate_red"})
	got := tree(rec.Ended())
	want := []string{
		"vibeteam.task(impl@0.1-0)<vibeteam.step(impl)", "vibeteam.step(impl)<vibeteam.step(loop)",
		"vibeteam.task(x@0.1-1)<vibeteam.step(review)", "vibeteam.step(review)<vibeteam.step(loop)",
		"vibeteam.step(loop)<vibeteam.session",
		"vibeteam.merge_queue<vibeteam.merge(merge)", "vibeteam.gate<vibeteam.merge(merge)",
	}
	if fmt.Sprint(got[:len(want)]) != fmt.Sprint(want) {
		t.Errorf("tree:\n got %v\nwant %v", got, want)
	}
	rest := fmt.Sprint(got[len(want):])
	for _, w := range []string{"vibeteam.merge(merge)<vibeteam.session", "vibeteam.step(never)<vibeteam.session", "vibeteam.session<"} {
		if !strings.Contains(rest, w) {
			t.Errorf("the spans ended with the session (%s) lack %s", rest, w)
		}
	}
	for _, sp := range rec.Ended() {
		if sp.Name() == SpanSession {
			if sp.Status().Description != "blocked: merge_gate_red" {
				t.Errorf("session status = %+v", sp.Status())
			}
			if sp.SpanContext().TraceID() != traceIDOf("s2") {
				t.Errorf("the session's trace is not derived from its id")
			}
		}
	}
}

// Every run of a session, the first and each resume, is in one trace; the
// TRACEPARENT a task is given is its span's.
func TestResumesShareTheTraceAndTraceParentIsTheTasks(t *testing.T) {
	tel, rec := recording(t)
	first, again := tel.Session("s3"), tel.Session("s3")
	env := first.TaskStarting("t")
	feed(first, events.SessionStart{}, "end t", events.SessionEnd{Status: "waiting"})
	feed(again, events.SessionResume{}, events.SessionEnd{Status: "completed"})
	var task sdktrace.ReadOnlySpan
	roots := 0
	for _, sp := range rec.Ended() {
		if sp.SpanContext().TraceID() != traceIDOf("s3") {
			t.Errorf("span %s is in another trace", sp.Name())
		}
		if sp.Name() == SpanTask {
			task = sp
		}
		if sp.Name() == SpanSession {
			roots++
			if resumed := attrOf(sp, "vibeteam.resumed"); roots == 2 && !resumed.AsBool() {
				t.Errorf("the resume's span does not say it is one")
			}
		}
	}
	if roots != 2 || task == nil {
		t.Fatalf("%d session spans, task %v", roots, task)
	}
	if want := fmt.Sprintf("00-%s-%s-01", task.SpanContext().TraceID(), task.SpanContext().SpanID()); env["TRACEPARENT"] != want {
		t.Errorf("TRACEPARENT = %q, want %q", env["TRACEPARENT"], want)
	}
}

func attrOf(sp sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range sp.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// Without telemetry nothing is followed, and nothing breaks.
func TestNilTelemetryDoesNothing(t *testing.T) {
	var tel *Telemetry
	s := tel.Session("x")
	if env := s.TaskStarting("t"); env != nil {
		t.Errorf("env = %v", env)
	}
	s.TaskEnded("t", state.TaskRecord{})
	s.Observe(state.Event{Payload: events.SessionEnd{}})
	tel.Shutdown()
	if Enabled(func(string) string { return "" }) {
		t.Error("enabled without variables")
	}
	if Enabled(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "TRUE"}[k]
	}) {
		t.Error("enabled with OTEL_SDK_DISABLED=TRUE")
	}
}
