package cli

import (
	"time"

	"github.com/vibeteam/vibeteam/ui"
)

// gateVerdict and shortCommit are the UI's, for land and show.
func gateVerdict(green bool, code int, reason string, d time.Duration) string {
	return ui.GateVerdict(green, code, reason, d)
}

func shortCommit(c string) string { return ui.ShortCommit(c) }
