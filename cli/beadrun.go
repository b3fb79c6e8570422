package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/state"
)

// runBead is the bead a run works on.
type runBead struct {
	fields  map[string]any
	id      string
	safeID  string // for the worktree's path and branch
	source  string // "bd", or the file it was read from
	tracker engine.BeadTracker
	client  *beads.Client // bd's, for a bead read through it
}

// refuseBead refuses, unless forced, a bead bd says is not to be worked
// on: closed (its close reason said), held back by what bd calls its
// blockers, or an epic with open children (its children are the work; bd
// would refuse to close it). A forced run closes it with bd close --force.
func refuseBead(client *beads.Client, b beads.Bead, force bool) error {
	if force {
		return nil
	}
	id := b.ID()
	if b.Status() == beads.StatusClosed {
		why := b.CloseReason()
		if why == "" {
			why = "bd gives no reason"
		}
		return exitf(ExitUsage, "bead %s is closed (%s); to work on it again, run it with --force (it is reopened, and closed anew when the run completes)", safe(id), safe(why))
	}
	// Readiness is bd's (beadBlockers).
	blockers, err := cmdutil.BeadBlockers(client, b)
	if err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	if len(blockers) > 0 {
		return exitf(ExitUsage, "bead %s is blocked by %s, still open; work on those first, or run it anyway with --force", safe(id), safe(strings.Join(blockers, ", ")))
	}
	if b.Type() != "epic" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), bdTimeout)
	defer cancel()
	children, err := client.Children(ctx, id)
	if err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	var open []string
	for _, ch := range children {
		if ch.Status() != beads.StatusClosed {
			open = append(open, fmt.Sprintf("%s (%s) %s", ch.ID(), ch.Status(), ch.Title()))
		}
	}
	if len(open) > 0 {
		return exitf(ExitUsage, "bead %s is an epic with %d open child issue(s), which are its work (bd closes an epic only when they are closed):\n  %s\n"+
			"work on them (vibeteam run --ready takes them all, and closes the epic after its last child), or run the epic anyway with --force",
			safe(id), len(open), safe(strings.Join(open, "\n  ")))
	}
	return nil
}

// claim claims the bead for this run (bd update ID --claim): atomically
// in_progress and yours. A bead another has claimed (or that is assigned
// to another) is refused, naming them, unless forced; so is one
// in_progress that nobody claimed. A forced run, or a bead in a status a
// claim does not take (blocked, or closed and forced), is set in_progress
// by the run as before.
func (rb *runBead) claim(streams IO, force bool) error {
	if rb.client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), bdTimeout)
	defer cancel()
	b, err := rb.client.Claim(ctx, rb.id)
	var ce *beads.ClaimError
	switch {
	case err == nil:
		// The bead as bd reads it back after the claim: its own fields are
		// the newest; the dependencies are show's (the claim leaves them out).
		for k, v := range b {
			if k != "dependencies" {
				rb.fields[k] = v
			}
		}
		rb.tracker = &beads.Claimed{Client: rb.client, Parent: beads.Bead(rb.fields).Parent()}
		return nil
	case !errors.As(err, &ce):
		// bd failing (not refusing) is a warning, as any failed update:
		// the run sets the bead in_progress as before.
		fmt.Fprintf(streams.Err, "warning: bead %s: could not claim it: %s\n", safe(rb.id), safe(err.Error()))
		return nil
	case force:
		return nil
	case ce.By != "":
		return exitf(ExitUsage, "bead %s is claimed by %s (bd: %s); leave it to them, or work on it anyway with --force", safe(rb.id), safe(ce.By), safe(ce.Line))
	case ce.Status == beads.StatusInProgress:
		return exitf(ExitUsage, "bead %s is in_progress already, claimed by nobody (bd: %s): someone may be working on it; work on it anyway with --force", safe(rb.id), safe(ce.Line))
	}
	return nil
}

// bdTimeout bounds one bd call.
const bdTimeout = cmdutil.BDTimeout

// beadForRun reads the bead of --bead ID (through bd) or --bead-file, and
// refuses one with open blockers (unless --force) or one another live
// session works on. nil without either flag.
func beadForRun(c *ucli.Context, streams IO, base string) (*runBead, error) {
	id, file := c.String("bead"), c.String("bead-file")
	switch {
	case id != "" && file != "":
		return nil, exitf(ExitUsage, "--bead and --bead-file: one or the other")
	case id == "" && file == "":
		if c.IsSet("base") || c.Bool("force") {
			return nil, exitf(ExitUsage, "--base and --force go with --bead")
		}
		return nil, nil
	}
	rb := &runBead{}
	if file != "" {
		b, err := beads.ReadFile(file)
		if err != nil {
			return nil, err
		}
		rb.fields, rb.source = b, file
	} else {
		client, b, err := cmdutil.ShowBead(streams, base, id)
		if err != nil {
			return nil, err
		}
		rb.fields, rb.source, rb.tracker, rb.client = b, "bd", client, client
		if err := refuseBead(client, b, c.Bool("force")); err != nil {
			return nil, err
		}
		client.Force = c.Bool("force")
	}
	rb.id = beads.Bead(rb.fields).ID()
	if rb.id == "" {
		return nil, exitf(ExitUsage, "the bead has no id (%s)", safe(rb.source))
	}
	rb.safeID = beads.SanitizeID(rb.id)
	if other := liveSessionOn(base, rb.id); other != "" {
		return nil, exitf(ExitUsage, "bead %s already has a running session, %s (vibeteam show %s)", safe(rb.id), other, other)
	}
	return rb, nil
}

// liveSessionOn names a running session that works on bead id, if any.
func liveSessionOn(base, id string) string {
	mgr := state.NewManager(base)
	list, err := mgr.List()
	if err != nil {
		return ""
	}
	for _, s := range list {
		if sid, _ := s.Bead["id"].(string); sid == id && mgr.Running(s.ID) {
			return s.ID
		}
	}
	return ""
}

// chooseGrimoire picks the grimoire for a bead run without a name, and
// says which rule chose it.
func chooseGrimoire(streams IO, base string, rb *runBead) (string, error) {
	name, rule, err := cmdutil.SelectGrimoire(base, rb.fields)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(streams.Err, "bead %s: grimoire %s (%s)\n", safe(rb.id), safe(name), safe(rule))
	return name, nil
}

// resumeBead gives a resumed session on a bead its tracker and worktree
// back.
func resumeBead(sess *state.Session, opts *core.RunOptions) error {
	if sess.Worktree == "" && sess.Bead == nil {
		return nil
	}
	if sess.BeadSource == "bd" {
		client, err := beads.NewClient(sess.BaseDir)
		if err != nil {
			if errors.Is(err, beads.ErrNoBD) {
				// Resume anyway: the status updates are warnings.
				return nil
			}
			return err
		}
		// A bead that had open blockers when its run started was run with
		// --force, and is closed with it.
		client.Force = len(beads.Bead(sess.Bead).OpenBlockers()) > 0
		opts.Beads = client
	}
	// A session on a bead runs in the bead's worktree and nowhere else:
	// whether or not a kill let it record the worktree, resume opens it
	// (the same one again, or anew when it was never made).
	id, _ := sess.Bead["id"].(string)
	if id == "" {
		return errors.New("it works on a bead without an id; its steps cannot run outside the bead's worktree")
	}
	opts.Workspace = landingOn(openWorkspace(opts.BaseDir, beads.SanitizeID(id), sess.BaseBranch), sess.Remote)
	return nil
}
