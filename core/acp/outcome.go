package acp

import (
	"errors"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

// Outcome statuses: how a turn ended, for the task.
const (
	Done    = "done"    // end_turn
	Failed  = "failed"  // max_tokens, max_turn_requests, refusal, a JSON-RPC error, the agent gone
	Stopped = "stopped" // cancelled
	Limited = "limited" // a usage or rate limit
	Parked  = "parked"  // a permission waits for a person
)

// Outcome is how a prompt's turn ended.
type Outcome struct {
	Status string
	Reason string // the stop reason, or "error"
	Error  string // the agent's error message, when it failed
	Limit  *agentstream.Limit
}

// Judge says how a turn ended from Prompt's result and error, and whether
// a permission was parked (the turn was cancelled for it).
func Judge(res PromptResult, err error, parked bool, now time.Time) Outcome {
	if err != nil {
		var rpc *RPCError
		msg := err.Error()
		if errors.As(err, &rpc) {
			msg = rpc.Error()
		}
		if l, ok := agentstream.LimitText(msg, now); ok {
			return Outcome{Status: Limited, Reason: "limit", Error: msg, Limit: l}
		}
		return Outcome{Status: Failed, Reason: "error", Error: msg}
	}
	switch res.StopReason {
	case StopEndTurn:
		return Outcome{Status: Done, Reason: StopEndTurn}
	case StopCancelled:
		if parked {
			return Outcome{Status: Parked, Reason: StopCancelled}
		}
		return Outcome{Status: Stopped, Reason: StopCancelled}
	case StopMaxTokens, StopMaxTurnRequests, StopRefusal:
		return Outcome{Status: Failed, Reason: res.StopReason, Error: "the agent stopped: " + res.StopReason}
	}
	return Outcome{Status: Failed, Reason: res.StopReason, Error: "the agent stopped for an unknown reason: " + res.StopReason}
}
