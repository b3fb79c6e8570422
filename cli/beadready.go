package cli

import (
	"context"

	"github.com/vibeteam/vibeteam/core/beads"
)

// beadBlockers is what holds bead b back, as bd itself decides it (bd
// blocked --json): a pinned blocker does not block, the child of a blocked
// parent is blocked. A bd without `blocked` (older versions) fails the
// call: then the bead's own blockers are read, with their status asked of
// bd where the bead does not carry it.
func beadBlockers(client *beads.Client, b beads.Bead) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bdTimeout)
	defer cancel()
	by, err := client.BlockedBy(ctx, b)
	if err == nil || ctx.Err() != nil {
		return by, err
	}
	return client.OpenBlockers(ctx, b)
}
