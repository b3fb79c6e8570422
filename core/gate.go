package core

import (
	"context"

	"github.com/vibeteam/vibeteam/core/engine"
)

// A merge gate run outside a session (vibeteam land), as a merge step
// runs its own.
type (
	GateSpec   = engine.GateSpec
	GateResult = engine.GateResult
)

// RunGate runs a gate command in spec.Dir (see engine.RunGate).
func RunGate(ctx context.Context, spec GateSpec) (GateResult, error) {
	return engine.RunGate(ctx, nil, spec)
}

// FailureTail is the end of a failed gate's output, and the failures it
// reported further up.
func FailureTail(output string) string { return engine.FailureTail(output) }
