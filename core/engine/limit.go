package engine

import (
	"github.com/vibeteam/vibeteam/core/flow"
	"github.com/vibeteam/vibeteam/core/state"
)

// parkedStep is the status of a step whose run the session stopped on.
func parkedStep(as state.Status) (flow.Status, string) {
	if as == state.StatusLimited {
		return flow.Limited, "the agent stopped on a usage limit"
	}
	return flow.Waiting, "the agent needs a person"
}
