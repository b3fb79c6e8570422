package cmdutil

import (
	"context"
	"fmt"

	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/ui"
)

// ShowBead reads bead id through bd (bd show ID --json), with bd's own
// message when it fails, and returns the client for the run's updates.
func ShowBead(streams IO, base, id string) (*beads.Client, beads.Bead, error) {
	client, err := beads.NewClient(base)
	if err != nil {
		return nil, nil, Exitf(ExitUsage, "%v, %s", err, beads.NoBDFileHint)
	}
	// What bd says on stderr while it succeeds reaches the user (the run
	// routes it through its events once it starts).
	client.Notice = func(l string) { fmt.Fprintf(streams.Err, "bd: %s\n", ui.Safe(l)) }
	ctx, cancel := context.WithTimeout(context.Background(), BDTimeout)
	defer cancel()
	b, err := client.Show(ctx, id)
	if err != nil {
		return nil, nil, Exitf(ExitFailed, "%v", err)
	}
	return client, b, nil
}

// SelectGrimoire is the grimoire a bead gets by the selection rules
// (label, .vibeteam/config.yaml by type, its default, implement-bead), and
// the rule that chose it.
func SelectGrimoire(base string, bead map[string]any) (name, rule string, err error) {
	cfg, err := beads.LoadConfig(base)
	if err != nil {
		return "", "", err
	}
	// By name only: a label or the config naming a path is refused.
	name, rule, err = beads.Choose(beads.Bead(bead), cfg)
	if err != nil {
		return "", "", err
	}
	return name, rule, nil
}

// BeadBlockers is what holds bead b back, as bd itself decides it (bd
// blocked --json): a pinned blocker does not block, the child of a blocked
// parent is blocked. A bd without `blocked` (older versions) fails the
// call: then the bead's own blockers are read, with their status asked of
// bd where the bead does not carry it.
func BeadBlockers(client *beads.Client, b beads.Bead) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), BDTimeout)
	defer cancel()
	by, err := client.BlockedBy(ctx, b)
	if err == nil || ctx.Err() != nil {
		return by, err
	}
	return client.OpenBlockers(ctx, b)
}
