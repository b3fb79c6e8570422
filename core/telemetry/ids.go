package telemetry

import (
	"context"
	"crypto/rand"

	"go.opentelemetry.io/otel/trace"
)

// presetKey carries the ids a span is to have: spans are made when they
// end, with the ids handed out when they started.
type presetKey struct{}

type preset struct {
	trace trace.TraceID
	span  trace.SpanID
}

func withPreset(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, presetKey{}, preset{tid, sid})
}

// presetIDs gives a span the ids its context carries (random ones when
// it carries none).
type presetIDs struct{}

func (presetIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if p, ok := ctx.Value(presetKey{}).(preset); ok {
		return p.trace, p.span
	}
	var tid trace.TraceID
	_, _ = rand.Read(tid[:])
	return tid, newSpanID()
}

func (presetIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if p, ok := ctx.Value(presetKey{}).(preset); ok {
		return p.span
	}
	return newSpanID()
}

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		_, _ = rand.Read(sid[:])
	}
	return sid
}
