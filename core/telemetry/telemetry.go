// Package telemetry exports runs to OpenTelemetry over OTLP/HTTP: traces
// (a session's run, its stages, steps, tasks, merges, gates and merge-queue
// waits) and metrics (tokens, cost, task and gate durations, beads by
// outcome). It is configured by the standard OTEL_* variables and does
// nothing without them: no network by default.
//
// Spans are made when they end, from the events a run emits (and, for a
// task, from what its attempt recorded), with span ids handed out when
// they start: a task's id goes to its agent as TRACEPARENT before the
// span exists. A session's trace id is derived from its id, so that a
// resumed session's runs join the same trace.
package telemetry

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span names.
const (
	SpanSession    = "vibeteam.session"     // one run (or resume) of a session
	SpanStage      = "vibeteam.stage"       // a stage of a stage workflow
	SpanStep       = "vibeteam.step"        // a grimoire step (agent, script, loop, stage)
	SpanMerge      = "vibeteam.merge"       // a grimoire's merge step
	SpanTask       = "vibeteam.task"        // one attempt of a task: one process
	SpanGate       = "vibeteam.gate"        // one run of a merge gate
	SpanMergeQueue = "vibeteam.merge_queue" // a merge waiting for the repository's merge queue
)

// Metric names.
const (
	MetricTokens       = "vibeteam.tokens"        // {token}; type: input | output | cache_read | cache_write
	MetricCost         = "vibeteam.cost"          // USD
	MetricTaskDuration = "vibeteam.task.duration" // s; adapter, status
	MetricGateDuration = "vibeteam.gate.duration" // s; green
	MetricBeads        = "vibeteam.beads"         // {bead}; outcome: the session's status
)

// The flush at exit waits at most this long, and much less once an export
// has failed already: a dead collector must not hold up the user.
const (
	flushTimeout     = 3 * time.Second
	deadFlushTimeout = 250 * time.Millisecond
)

// Telemetry is the exporter of one vibeteam process: every session it
// runs reports to it (Session).
type Telemetry struct {
	tracer   trace.Tracer
	traces   *sdktrace.TracerProvider // nil: traces are not exported
	metrics  *sdkmetric.MeterProvider // nil: metrics are not exported
	ins      instruments
	endpoint string

	warn     func(string)
	warnOnce sync.Once
	failed   atomic.Bool
}

// Enabled reports whether the variables (read with getenv) ask for an
// export: an OTLP endpoint is set, and OTEL_SDK_DISABLED is not true.
func Enabled(getenv func(string) string) bool {
	return tracesWanted(getenv) || metricsWanted(getenv)
}

func disabled(getenv func(string) string) bool {
	return strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true")
}

func tracesWanted(getenv func(string) string) bool {
	return !disabled(getenv) && getenv("OTEL_TRACES_EXPORTER") != "none" &&
		(getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "")
}

func metricsWanted(getenv func(string) string) bool {
	return !disabled(getenv) && getenv("OTEL_METRICS_EXPORTER") != "none" &&
		(getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "")
}

// New starts the exporters the variables ask for (read with getenv; the
// SDK reads the OTEL_* variables of the process itself), or returns nil
// when they ask for none. version is vibeteam's, for the resource. warn is
// told, once, when an export fails or the exporters cannot be made; the
// run goes on either way.
func New(ctx context.Context, getenv func(string) string, version string, warn func(string)) *Telemetry {
	if !Enabled(getenv) {
		return nil
	}
	t := &Telemetry{warn: warn, endpoint: endpointOf(getenv)}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(t.exportFailed))
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "vibeteam"), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES: what could be read is kept.
		t.exportFailed(err)
	}
	if tracesWanted(getenv) {
		if err := t.startTraces(ctx, res); err != nil {
			t.exportFailed(err)
		}
	}
	if metricsWanted(getenv) {
		if err := t.startMetrics(ctx, res); err != nil {
			t.exportFailed(err)
		}
	}
	if t.traces == nil && t.metrics == nil {
		return nil
	}
	return t
}

func endpointOf(getenv func(string) string) string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// retry bounds the exporters' retries: a collector that is down stays
// down for the length of a run more often than not.
var (
	traceRetry  = otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 5 * time.Second}
	metricRetry = otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 5 * time.Second}
)

func (t *Telemetry) startTraces(ctx context.Context, res *resource.Resource) error {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithRetry(traceRetry))
	if err != nil {
		return err
	}
	t.traces = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(presetIDs{}),
	)
	t.tracer = t.traces.Tracer("github.com/vibeteam/vibeteam")
	return nil
}

func (t *Telemetry) startMetrics(ctx context.Context, res *resource.Resource) error {
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithRetry(metricRetry))
	if err != nil {
		return err
	}
	t.metrics = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
	ins, err := newInstruments(t.metrics.Meter("github.com/vibeteam/vibeteam"))
	if err != nil {
		return err
	}
	t.ins = ins
	return nil
}

// exportFailed is the SDK's error handler: the first failure is a warning,
// the rest are the same failure again.
func (t *Telemetry) exportFailed(err error) {
	t.failed.Store(true)
	t.warnOnce.Do(func() {
		if t.warn != nil {
			t.warn(fmt.Sprintf("telemetry: could not export to %s: %v (the run goes on; nothing more is said about it)", t.endpoint, err))
		}
	})
}

// Shutdown flushes what is left, within a bounded time (shorter once an
// export has failed), and stops the exporters. Safe on nil.
func (t *Telemetry) Shutdown() {
	if t == nil {
		return
	}
	wait := flushTimeout
	if t.failed.Load() {
		wait = deadFlushTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var wg sync.WaitGroup
	if t.traces != nil {
		wg.Go(func() { _ = t.traces.Shutdown(ctx) })
	}
	if t.metrics != nil {
		wg.Go(func() { _ = t.metrics.Shutdown(ctx) })
	}
	wg.Wait()
}

// traceIDOf is the trace of a session: every run of it (the first, each
// resume) is in the same trace.
func traceIDOf(session string) trace.TraceID {
	sum := sha256.Sum256([]byte("vibeteam session " + session))
	var id trace.TraceID
	copy(id[:], sum[:16])
	return id
}

// instruments are the metrics a run records.
type instruments struct {
	tokens       metric.Int64Counter
	cost         metric.Float64Counter
	taskDuration metric.Float64Histogram
	gateDuration metric.Float64Histogram
	beads        metric.Int64Counter
}

func newInstruments(m metric.Meter) (instruments, error) {
	var ins instruments
	var errs [5]error
	ins.tokens, errs[0] = m.Int64Counter(MetricTokens, metric.WithUnit("{token}"), metric.WithDescription("Tokens the agents reported, by adapter and type"))
	ins.cost, errs[1] = m.Float64Counter(MetricCost, metric.WithUnit("USD"), metric.WithDescription("Cost the agents reported, by adapter"))
	ins.taskDuration, errs[2] = m.Float64Histogram(MetricTaskDuration, metric.WithUnit("s"), metric.WithDescription("Duration of a task's attempt, by adapter and status"))
	ins.gateDuration, errs[3] = m.Float64Histogram(MetricGateDuration, metric.WithUnit("s"), metric.WithDescription("Duration of a merge gate's run, by result"))
	ins.beads, errs[4] = m.Int64Counter(MetricBeads, metric.WithUnit("{bead}"), metric.WithDescription("Bead runs that ended, by outcome"))
	for _, err := range errs {
		if err != nil {
			return ins, err
		}
	}
	return ins, nil
}
