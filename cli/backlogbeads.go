package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/backlog"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/internal/excerpt"
	"github.com/vibeteam/vibeteam/ui"
)

// closeDelay is how long a completed bead of a --ready run may wait for
// the others completing meanwhile, to be closed with them in one bd call.
// A bead whose close may make another ready is closed before the run next
// asks what is ready; the rest when nothing runs, or at the end.
const closeDelay = 30 * time.Second

// ready are the ready beads the run may take: bd's order, epics left out
// (they are worked through their children, and closed after the last),
// and only those with every --label. bd is asked again only when none of
// its last list is left to take, or a close may have made another bead
// ready (the closed bead had dependents, or an epic closed); the queued
// closes go first then. A bead of a stale list that another took since is
// refused by its claim.
func (br *backlogRun) ready(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, bdTimeout)
	defer cancel()
	left := br.untaken()
	idle := br.running.Load() == 0
	if br.closer.Urgent() || idle && br.closer.Pending() {
		br.closer.Flush(ctx)
	}
	stale := br.closer.Stale()
	switch {
	case br.readyIDs == nil, stale:
	case len(left) > 0:
		return left, nil
	case !idle:
		// Nothing left of the last list, and beads still run: bd is asked
		// again when they are done (or a close changes the list).
		return nil, nil
	}
	list, err := br.client.Ready(ctx)
	var be *beads.BDError
	if errors.As(err, &be) {
		// bd's own words first: they say what to fix (bd init, ...).
		return nil, fmt.Errorf("bd: %s (%s)", be.Said(), beads.Command(be.Args...))
	}
	if err != nil {
		return nil, err
	}
	var ids, unseen []string
	br.prepMu.Lock()
	for _, b := range list {
		if b.Type() == "epic" || !allIn(br.sess.Backlog.Labels, b.Labels()) {
			continue
		}
		ids = append(ids, b.ID())
		if br.listed[b.ID()] == nil && !br.taken[b.ID()] {
			br.listed[b.ID()] = b
			unseen = append(unseen, b.ID())
		}
	}
	br.readyIDs = ids
	br.prepMu.Unlock()
	// The beads new to the run, whole, in one call: their templates see
	// what run --bead's see (bd ready leaves out their dependencies).
	shown, err := br.client.ShowAll(ctx, unseen)
	if err != nil {
		// What bd ready said is enough to choose; each run reads the bead
		// again if it must.
		br.board.Line("warning: " + safe(err.Error()))
	}
	br.prepMu.Lock()
	for id, b := range shown {
		if br.listed[id] != nil {
			br.listed[id] = b
		}
	}
	br.prepMu.Unlock()
	return br.untaken(), nil
}

// untaken are the ids of bd's last ready list that the run has not taken.
func (br *backlogRun) untaken() []string {
	br.prepMu.Lock()
	defer br.prepMu.Unlock()
	var left []string
	for _, id := range br.readyIDs {
		if !br.taken[id] {
			left = append(left, id)
		}
	}
	return left
}

// take marks bead id taken by the run (started, or failed to prepare).
func (br *backlogRun) take(id string) {
	br.prepMu.Lock()
	br.taken[id] = true
	br.prepMu.Unlock()
}

// claim claims bead id for its run (bd update --claim --json), and
// returns its fields (those bd show gave when it was listed, updated with
// what the claim printed) and the tracker of its session. A bead another
// has claimed is a *beads.ClaimError, for the run to skip; bd failing
// otherwise is a warning, and the session sets the status as before.
func (br *backlogRun) claim(ctx context.Context, id string) (map[string]any, engine.BeadTracker, error) {
	br.prepMu.Lock()
	listed := br.listed[id]
	br.prepMu.Unlock()
	fields := map[string]any{}
	if listed == nil {
		// A resumed bead whose session was never made.
		var err error
		if listed, err = br.show(ctx, id); err != nil {
			return nil, nil, err
		}
	}
	for k, v := range listed {
		fields[k] = v
	}
	// A client of its own: the session sets where bd's notices go.
	client := *br.client
	cctx, cancel := context.WithTimeout(ctx, bdTimeout)
	defer cancel()
	claimed, err := client.Claim(cctx, id)
	var ce *beads.ClaimError
	switch {
	case errors.As(err, &ce):
		return nil, nil, ce
	case err != nil:
		br.board.Line(fmt.Sprintf("warning: bead %s: could not claim it: %s", safe(id), safe(err.Error())))
		return fields, &client, nil
	}
	for k, v := range claimed {
		if k != "dependencies" {
			fields[k] = v
		}
	}
	return fields, &backlogTracker{Claimed: &beads.Claimed{Client: &client}, closer: br.closer, bead: fields}, nil
}

// backlogTracker is a --ready bead's tracker: claimed by the backlog, and
// closed through its closer, with the beads completing about the same
// time.
type backlogTracker struct {
	*beads.Claimed
	closer *beads.Closer
	bead   beads.Bead
}

// Close queues the bead's close; the backlog reports a refusal.
func (t *backlogTracker) Close(_ context.Context, _, reason string) error {
	t.closer.Add(t.bead, reason)
	return nil
}

// closeRefused says that bd did not close bead id, on the board and in
// its record.
func (br *backlogRun) closeRefused(id, why string) {
	br.board.Line(fmt.Sprintf("warning: bead %s: bd did not close it: %s", safe(id), safe(why)))
	br.mu.Lock()
	for _, b := range br.sess.Backlog.Beads {
		if b.ID == id {
			b.Reason = "bd did not close it: " + why
		}
	}
	br.changed()
	br.mu.Unlock()
}

// stillBlocked are the lines of the beads bd still calls blocked at the
// end of the run (with the run's labels), and by what; nil when none is.
func (br *backlogRun) stillBlocked() []string {
	ctx, cancel := context.WithTimeout(context.Background(), bdTimeout)
	defer cancel()
	list, err := br.client.Blocked(ctx)
	if err != nil {
		return []string{"could not ask bd which beads are still blocked: " + safe(err.Error())}
	}
	var lines []string
	for _, b := range list {
		if !allIn(br.sess.Backlog.Labels, b.Labels()) {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %-12s %s — blocked by %s", safe(b.ID()), ui.Fit(safe(b.Title()), 40), safe(strings.Join(b.BlockedByIDs(), ", "))))
	}
	return lines
}

// awaitOther waits for the other process that runs bead b's session to
// end, then records how the session ended there: a race between the
// bead's own resume and its backlog's is won by one, and the bead is what
// its session says, never "skipped". False when the session was left
// unfinished there (this run then resumes it) or ctx ended first.
func (br *backlogRun) awaitOther(ctx context.Context, b *state.BacklogBead, other *state.LockedError) bool {
	br.board.Line(fmt.Sprintf("bead %s: its session %s runs in another process (pid %d); waiting for it to end", safe(b.ID), b.Session, other.Pid))
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		lock, err := br.mgr.Lock(b.Session)
		if err == nil {
			lock.Release()
			break
		}
		if !errors.As(err, new(*state.LockedError)) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	sess, err := br.mgr.Load(b.Session)
	if err != nil || backlog.Unfinished(string(sess.Status)) {
		return false
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	b.Status, b.Reason, b.Next = string(sess.Status), "", ""
	if sess.Status != state.StatusCompleted {
		b.Next = nextCommand(sess, false)
		b.Reason = strings.TrimSpace(excerpt.FirstLine(string(sess.BlockedReason) + "\n" + sess.Error))
	}
	t := sess.AgentTotals()
	b.Tokens, b.CostUSD = t.Tokens.Input+t.Tokens.Output, t.CostUSD
	return true
}

// closeOwed queues the close of every bead of the backlog whose session
// completed but that bd does not show closed: a run stopped (a kill, a
// reboot) after the bead's session completed and before its queued close
// reached bd. One bd show for them all; nothing for a new backlog.
func (br *backlogRun) closeOwed(ctx context.Context) {
	reasons := map[string]string{}
	var ids []string
	for _, b := range br.sess.Backlog.Beads {
		if b.Session == "" || !br.mgr.Exists(b.Session) {
			continue
		}
		sess, err := br.mgr.Load(b.Session)
		if err != nil || sess.Status != state.StatusCompleted {
			continue
		}
		reason := fmt.Sprintf("Completed by vibeteam grimoire %s (session %s)", sess.Workflow, sess.ID)
		if sess.Merged != "" {
			reason += fmt.Sprintf("; merged into %s as %s", sess.BaseBranch, sess.Merged)
		}
		ids, reasons[b.ID] = append(ids, b.ID), reason
	}
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, bdTimeout)
	defer cancel()
	shown, err := br.client.ShowAll(ctx, ids)
	if err != nil {
		br.board.Line("warning: could not check that the completed beads are closed: " + safe(err.Error()))
		return
	}
	for _, id := range ids {
		if b := shown[id]; b != nil && b.Status() != beads.StatusClosed {
			br.closer.Add(b, reasons[id])
		}
	}
}
