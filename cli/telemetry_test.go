package cli

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a collector for a test: it keeps the spans and metrics
// vibeteam exports over OTLP/HTTP (protobuf), with their resources.
type otlpReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource map[string]string
	metrics  []*metricspb.Metric
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{resource: map[string]string{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var reply proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		var in colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(data, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range in.ResourceSpans {
			r.keepResource(rs.Resource.GetAttributes())
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		reply = &colltrace.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var in collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(data, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range in.ResourceMetrics {
			r.keepResource(rm.Resource.GetAttributes())
			for _, sm := range rm.ScopeMetrics {
				r.metrics = append(r.metrics, sm.Metrics...)
			}
		}
		reply = &collmetrics.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, req)
		return
	}
	out, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *otlpReceiver) keepResource(attrs []*common.KeyValue) {
	for _, kv := range attrs {
		r.resource[kv.Key] = kv.Value.GetStringValue()
	}
}

func spanAttr(s *tracepb.Span, key string) *common.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func spanString(s *tracepb.Span, key string) string { return spanAttr(s, key).GetStringValue() }

// otelProject is a bead run of a grimoire with an agent step whose agent
// records its environment and reports tokens and cost, a script step,
// and a merge with a gate; run under a budget.
func otelProject(t *testing.T) (p *beadProject, agentRecord string) {
	p = newBeadProject(t)
	dir := t.TempDir()
	answer := `{"type":"system","subtype":"init","session_id":"otel-1","model":"claude-test-1"}` + "\n" +
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"otel-1","total_cost_usd":0.25,"usage":{"input_tokens":300,"output_tokens":40}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "answer.jsonl"), []byte(answer), 0o644); err != nil {
		t.Fatal(err)
	}
	agentRecord = filepath.Join(dir, "agent.json")
	p.write(".vibeteam/adapters/structured.yaml", fmt.Sprintf("name: structured\ncommand: %s\nmodes:\n  headless:\n    args: []\n    output: claude-stream-json\n    prompt: { position: arg }\n", fakeAgent))
	p.write(".vibeteam/grimoires/traced.yaml", `name: traced
steps:
  - name: ask
    type: agent
    adapter: structured
    spell: |
      record=`+agentRecord+` cat=`+dir+`/answer.jsonl
  - name: work
    type: script
    command: echo {{.bead.id}} > work.txt
  - name: merge
    type: merge
    require_review: false
    gate: test -f work.txt
`)
	p.write("bead.json", `{"id":"bd-9","title":"Traced","status":"open","issue_type":"feature"}`)
	p.git("add", "bead.json")
	p.git("commit", "-q", "-m", "bead")
	return p, agentRecord
}

// A run with OTEL_EXPORTER_OTLP_ENDPOINT exports its span tree (session →
// steps → the agent's task; the merge → its gate) with the attributes a
// fleet's dashboards need, its metrics, and the resource the OTEL_*
// variables describe; the agent got the task's span as TRACEPARENT.
func TestTelemetryExportsTheRun(t *testing.T) {
	t.Parallel()
	recv := newOTLPReceiver(t)
	p, agentRecord := otelProject(t)
	cmd := p.command("run", "traced", "--bead-file", "bead.json", "--headless", "--max-cost", "5")
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_SERVICE_NAME=vt-test",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=test", "OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=", "OTEL_SDK_DISABLED=")
	r := runResult(t, cmd)
	wantCode(t, r, 0)
	if strings.Contains(r.stderr, "telemetry") {
		t.Errorf("a live collector gave a warning:\n%s", r.stderr)
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	if recv.resource["service.name"] != "vt-test" || recv.resource["deployment.environment"] != "test" || recv.resource["service.version"] == "" {
		t.Errorf("resource = %v", recv.resource)
	}
	byName := map[string][]*tracepb.Span{}
	byID := map[string]*tracepb.Span{}
	for _, s := range recv.spans {
		byName[s.Name] = append(byName[s.Name], s)
		byID[hex.EncodeToString(s.SpanId)] = s
	}
	one := func(name string, match func(*tracepb.Span) bool) *tracepb.Span {
		t.Helper()
		var found []*tracepb.Span
		for _, s := range byName[name] {
			if match(s) {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d %s span(s) matched, want 1; spans: %s", len(found), name, spanList(recv.spans))
		}
		return found[0]
	}
	any := func(*tracepb.Span) bool { return true }
	step := func(name string) func(*tracepb.Span) bool {
		return func(s *tracepb.Span) bool { return spanString(s, "vibeteam.step") == name }
	}
	root := one("vibeteam.session", any)
	if len(root.ParentSpanId) != 0 || spanString(root, "vibeteam.bead") != "bd-9" || spanString(root, "vibeteam.status") != "completed" {
		t.Errorf("session span: parent %x, attributes %v", root.ParentSpanId, root.Attributes)
	}
	ask, work, merge := one("vibeteam.step", step("ask")), one("vibeteam.step", step("work")), one("vibeteam.merge", step("merge"))
	for _, s := range []*tracepb.Span{ask, work, merge} {
		if hex.EncodeToString(s.ParentSpanId) != hex.EncodeToString(root.SpanId) {
			t.Errorf("step %s's parent is %x, want the session's %x", spanString(s, "vibeteam.step"), s.ParentSpanId, root.SpanId)
		}
	}
	if spanString(merge, "vibeteam.merge.commit") == "" {
		t.Errorf("the merge span has no commit: %v", merge.Attributes)
	}
	gate := one("vibeteam.gate", any)
	if hex.EncodeToString(gate.ParentSpanId) != hex.EncodeToString(merge.SpanId) || !spanAttr(gate, "vibeteam.gate.green").GetBoolValue() {
		t.Errorf("gate span: parent %x (merge %x), attributes %v", gate.ParentSpanId, merge.SpanId, gate.Attributes)
	}
	task := one("vibeteam.task", func(s *tracepb.Span) bool { return strings.HasPrefix(spanString(s, "vibeteam.task"), "ask@") })
	if hex.EncodeToString(task.ParentSpanId) != hex.EncodeToString(ask.SpanId) {
		t.Errorf("the agent's task span's parent is %x, want the ask step's %x", task.ParentSpanId, ask.SpanId)
	}
	if spanString(task, "vibeteam.adapter") != "structured" || spanString(task, "vibeteam.model") != "claude-test-1" ||
		spanAttr(task, "vibeteam.tokens.input").GetIntValue() != 300 || spanAttr(task, "vibeteam.cost_usd").GetDoubleValue() != 0.25 ||
		spanString(task, "vibeteam.bead") != "bd-9" || spanString(task, "vibeteam.status") != "DONE" {
		t.Errorf("task span attributes: %v", task.Attributes)
	}
	for _, s := range recv.spans {
		if hex.EncodeToString(s.TraceId) != hex.EncodeToString(root.TraceId) {
			t.Errorf("span %s is in trace %x, not the session's %x", s.Name, s.TraceId, root.TraceId)
		}
		if s.ParentSpanId != nil && byID[hex.EncodeToString(s.ParentSpanId)] == nil {
			t.Errorf("span %s's parent %x was never exported", s.Name, s.ParentSpanId)
		}
		if s.EndTimeUnixNano < s.StartTimeUnixNano {
			t.Errorf("span %s ends before it starts", s.Name)
		}
	}
	if want, got := fmt.Sprintf("00-%x-%x-01", task.TraceId, task.SpanId), recordedEnv(t, agentRecord)["TRACEPARENT"]; got != want {
		t.Errorf("the agent's TRACEPARENT = %q, want its task span's %q", got, want)
	}
	checkRunMetrics(t, recv.metrics)
	if t.Failed() || testing.Verbose() {
		t.Logf("spans:%s", spanList(recv.spans))
	}
}

func spanList(spans []*tracepb.Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %s %x←%x %v", s.Name, s.SpanId, s.ParentSpanId, s.Attributes)
	}
	return b.String()
}

// checkRunMetrics: the agent's tokens and cost, the gate's and the task's
// durations, and the bead's outcome.
func checkRunMetrics(t *testing.T, metrics []*metricspb.Metric) {
	t.Helper()
	sums := map[string]float64{}
	counts := map[string]uint64{}
	for _, m := range metrics {
		switch d := m.Data.(type) {
		case *metricspb.Metric_Sum:
			for _, p := range d.Sum.DataPoints {
				v := p.GetAsDouble() + float64(p.GetAsInt())
				key := m.Name
				for _, kv := range p.Attributes {
					if kv.Key == "vibeteam.outcome" {
						key += ":" + kv.Value.GetStringValue()
					}
				}
				sums[key] = v // cumulative: the last export holds the total
			}
		case *metricspb.Metric_Histogram:
			var n uint64
			for _, p := range d.Histogram.DataPoints {
				n += p.Count
			}
			counts[m.Name] = n
		}
	}
	if sums["vibeteam.tokens"] == 0 {
		// Summed over types below; a zero means none came.
		t.Errorf("no tokens metric: %v", sums)
	}
	var tokens float64
	for _, m := range metrics {
		if s, ok := m.Data.(*metricspb.Metric_Sum); ok && m.Name == "vibeteam.tokens" {
			tokens = 0
			for _, p := range s.Sum.DataPoints {
				tokens += float64(p.GetAsInt())
			}
		}
	}
	if tokens != 340 || sums["vibeteam.cost"] != 0.25 || sums["vibeteam.beads:completed"] != 1 {
		t.Errorf("tokens %v (want 340), cost %v (want 0.25), beads completed %v (want 1); sums %v", tokens, sums["vibeteam.cost"], sums["vibeteam.beads:completed"], sums)
	}
	if counts["vibeteam.gate.duration"] != 1 || counts["vibeteam.task.duration"] < 1 {
		t.Errorf("histogram counts = %v, want one gate run and the task's", counts)
	}
}

// A collector that is not there costs one warning and nothing else: the
// run completes, its exit code is its own.
func TestTelemetryDeadEndpointIsOneWarning(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	p, _ := otelProject(t)
	cmd := p.command("run", "traced", "--bead-file", "bead.json", "--headless")
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+dead, "OTEL_SDK_DISABLED=", "OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=")
	r := runResult(t, cmd)
	wantCode(t, r, 0)
	if n := strings.Count(r.stderr, "telemetry: could not export"); n != 1 {
		t.Errorf("%d telemetry warnings, want 1:\n%s", n, r.stderr)
	}
	if s := p.sessions(); len(s) != 1 || s[0].Status != "completed" {
		t.Errorf("sessions: %+v", s)
	}
}

// OTEL_SDK_DISABLED=true, or no endpoint at all, exports nothing.
func TestTelemetryOffExportsNothing(t *testing.T) {
	t.Parallel()
	recv := newOTLPReceiver(t)
	p, agentRecord := otelProject(t)
	cmd := p.command("run", "traced", "--bead-file", "bead.json", "--headless")
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_SDK_DISABLED=true")
	wantCode(t, runResult(t, cmd), 0)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.spans) != 0 || len(recv.metrics) != 0 {
		t.Errorf("OTEL_SDK_DISABLED=true exported %d spans, %d metrics", len(recv.spans), len(recv.metrics))
	}
	if tp, ok := recordedEnv(t, agentRecord)["TRACEPARENT"]; ok {
		t.Errorf("the agent got TRACEPARENT=%q with telemetry off", tp)
	}
}

// recordedEnv is the environment fakeagent's record= wrote.
func recordedEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	var rec struct{ Env []string }
	readJSON(t, path, &rec)
	env := map[string]string{}
	for _, kv := range rec.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
