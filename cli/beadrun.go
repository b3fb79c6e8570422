package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/state"
)

// runBead is the bead a run works on.
type runBead struct {
	fields  map[string]any
	id      string
	safeID  string // for the worktree's path and branch
	source  string // "bd", or the file it was read from
	tracker core.BeadTracker
}

// bdTimeout bounds one bd call.
const bdTimeout = 30 * time.Second

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
			return nil, exitf(ExitUsage, "%v", err)
		}
		rb.fields, rb.source = b, file
	} else {
		client, b, err := showBead(streams, base, id)
		if err != nil {
			return nil, err
		}
		rb.fields, rb.source, rb.tracker = b, "bd", client
		// Readiness is bd's (beadBlockers); bd close refuses a bead with
		// open blockers, so a forced run closes it with --force.
		blockers, err := beadBlockers(client, b)
		if err != nil {
			return nil, exitf(ExitFailed, "%v", err)
		}
		if len(blockers) > 0 && !c.Bool("force") {
			return nil, exitf(ExitUsage, "bead %s is blocked by %s, still open; work on those first, or run it anyway with --force", safe(id), safe(strings.Join(blockers, ", ")))
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

// showBead reads bead id through bd (bd show ID --json), with bd's own
// message when it fails, and returns the client for the run's updates.
func showBead(streams IO, base, id string) (*beads.Client, beads.Bead, error) {
	client, err := beads.NewClient(base)
	if err != nil {
		return nil, nil, exitf(ExitUsage, "%v, %s", err, beads.NoBDFileHint)
	}
	// What bd says on stderr while it succeeds reaches the user (the run
	// routes it through its events once it starts).
	client.Notice = func(l string) { fmt.Fprintf(streams.Err, "bd: %s\n", safe(l)) }
	ctx, cancel := context.WithTimeout(context.Background(), bdTimeout)
	defer cancel()
	b, err := client.Show(ctx, id)
	if err != nil {
		return nil, nil, exitf(ExitFailed, "%v", err)
	}
	return client, b, nil
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
	name, rule, err := selectGrimoire(base, rb.fields)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(streams.Err, "bead %s: grimoire %s (%s)\n", safe(rb.id), safe(name), safe(rule))
	return name, nil
}

// selectGrimoire is the grimoire a bead gets by the selection rules
// (label, .vibeteam/config.yaml by type, its default, implement-bead), and
// the rule that chose it.
func selectGrimoire(base string, bead map[string]any) (name, rule string, err error) {
	cfg, err := beads.LoadConfig(base)
	if err != nil {
		return "", "", exitf(ExitUsage, "%v", err)
	}
	// By name only: a label or the config naming a path is refused.
	name, rule, err = beads.Choose(beads.Bead(bead), cfg)
	if err != nil {
		return "", "", exitf(ExitUsage, "%v", err)
	}
	return name, rule, nil
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
	opts.Workspace = openWorkspace(opts.BaseDir, beads.SanitizeID(id), sess.BaseBranch)
	return nil
}
