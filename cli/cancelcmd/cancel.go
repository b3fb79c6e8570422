// Package cancelcmd is `vibeteam cancel`: a running session is stopped, a
// parked or blocked one marked cancelled, its bead open again, and with
// --clean its worktree and branch removed.
package cancelcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/core/worktree"
	"github.com/vibeteam/vibeteam/ui"
)

// cancelWait bounds the wait for a running vibeteam to stop its tasks and
// save after SIGTERM (their grace is 10 s by default).
const cancelWait = 30 * time.Second

// Options are what `vibeteam cancel` is asked.
type Options struct {
	IO    cmdutil.IO
	Base  string // the project's base dir
	ID    string // the session's id as given: whole, or a unique prefix
	Clean bool   // --clean
	Force bool   // --force
}

// NewCmdCancel is the `cancel` command. Its action gathers the Options and
// hands them to runF (nil: Run).
func NewCmdCancel(streams cmdutil.IO, runF func(*Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
	return &ucli.Command{
		Name:      "cancel",
		Usage:     "cancel a session: a running one is stopped (its tasks, then vibeteam, which saves), a parked or blocked one is marked cancelled; its bead goes back to open",
		ArgsUsage: "ID",
		Flags: []ucli.Flag{
			cmdutil.BaseDirFlag,
			&ucli.BoolFlag{Name: "clean", Usage: "also remove the bead's worktree and branch (refused when the branch has commits not merged into its base)"},
			&ucli.BoolFlag{Name: "force", Usage: "with --clean: remove them even with unmerged commits"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return cmdutil.Exitf(cmdutil.ExitUsage, "cancel needs a session id (see vibeteam sessions)")
			}
			if c.Bool("force") && !c.Bool("clean") {
				return cmdutil.Exitf(cmdutil.ExitUsage, "--force goes with --clean")
			}
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			return runF(&Options{IO: streams, Base: base, ID: c.Args().First(), Clean: c.Bool("clean"), Force: c.Bool("force")})
		},
	}
}

// Run cancels the session opts name.
func Run(opts *Options) error {
	mgr := state.NewManager(opts.Base)
	id, err := cmdutil.ResolveSession(mgr, opts.ID)
	if err != nil {
		return err
	}
	lock, stopped, err := lockStopping(opts.IO, mgr, id)
	if err != nil {
		return err
	}
	defer lock.Release()
	sess, err := mgr.Load(id)
	if err != nil {
		return cmdutil.SessionLoadError(err)
	}
	beadID, _ := sess.Bead["id"].(string)
	if sess.Status == state.StatusCompleted {
		return completed(opts, sess, beadID, stopped)
	}
	// A merge may have landed before the stop took effect: then the
	// session says so, and the bead is done, never open again with its
	// work on the base branch.
	landed, err := workLanded(opts.Base, sess, beadID)
	if err != nil {
		// Its bead must not be opened again while its work may be on the
		// remote: another machine would do it twice.
		return cmdutil.Exitf(cmdutil.ExitFailed, "session %s: its merge was under way, and whether it landed on %s cannot be told: %v; nothing was changed, cancel again when %s is reachable", id, ui.Safe(sess.Remote), err, ui.Safe(sess.Remote))
	}
	if landed != "" {
		return cancelLanded(opts.IO, mgr, sess, beadID, landed, mergeUnderWay(sess))
	}
	now := time.Now()
	sess.Status, sess.EndTime = state.StatusCancelled, &now
	sess.Error = "cancelled"
	if err := mgr.Save(sess); err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
	}
	fmt.Fprintf(opts.IO.Err, "session %s cancelled\n", id)
	keptBeads(opts.IO, mgr, sess)
	if beadID != "" && sess.BeadSource == "bd" {
		reopen(opts.IO, opts.Base, beadID)
	}
	if sess.Worktree == "" {
		return nil
	}
	if !opts.Clean {
		fmt.Fprintf(opts.IO.Err, "its worktree is kept: %s (branch %s); vibeteam cancel %s --clean removes them\n", ui.Safe(sess.Worktree), ui.Safe(sess.Branch), id)
		return nil
	}
	return cleanWorktree(opts.IO, opts.Base, sess, beadID, opts.Force)
}

// lockStopping takes the session's lock; a vibeteam that holds it is
// stopped first (stopped says so).
func lockStopping(streams cmdutil.IO, mgr *state.Manager, id string) (lock *state.Lock, stopped bool, err error) {
	lock, err = mgr.Lock(id)
	var locked *state.LockedError
	if errors.As(err, &locked) {
		lock, err = stopRunning(streams, mgr, id, locked)
		return lock, err == nil, err
	}
	if err != nil {
		return nil, false, cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
	}
	return lock, false, nil
}

// completed is cancel of a completed session: nothing to cancel, but a
// worktree its landing could not remove goes with --clean.
func completed(opts *Options, sess *state.Session, beadID string, stopped bool) error {
	if stopped {
		// The stop came too late: its merge had landed (or every step had
		// ended), and the run completed.
		fmt.Fprintf(opts.IO.Err, "session %s completed before the cancel could stop it", sess.ID)
		if sess.Note != "" {
			fmt.Fprintf(opts.IO.Err, ": %s", ui.Safe(sess.Note))
		}
		fmt.Fprintln(opts.IO.Err)
		return nil
	}
	if !opts.Clean || sess.Worktree == "" {
		return cmdutil.Exitf(cmdutil.ExitUsage, "session %s has completed; there is nothing to cancel", sess.ID)
	}
	// Its work landed but its worktree could not be removed then: --clean
	// removes what is left, so the bead can run again.
	return cleanWorktree(opts.IO, opts.Base, sess, beadID, opts.Force)
}

// keptBeads names the beads of a cancelled backlog that keep their own
// sessions: one waiting for a review may still be wanted.
func keptBeads(streams cmdutil.IO, mgr *state.Manager, sess *state.Session) {
	if sess.Backlog == nil {
		return
	}
	for _, b := range sess.Backlog.Beads {
		if b.Session == "" || !mgr.Exists(b.Session) {
			if b.Status == state.BeadStarting {
				unclaim(streams, sess.BaseDir, b.ID)
			}
			continue
		}
		if bs, err := mgr.Load(b.Session); err == nil && bs.Status != state.StatusCompleted && bs.Status != state.StatusCancelled {
			fmt.Fprintf(streams.Err, "bead %s keeps its session %s (%s): vibeteam cancel %s [--clean]\n", ui.Safe(b.ID), b.Session, bs.Status, b.Session)
		}
	}
}

// unclaim gives back the claim of a bead a killed backlog had claimed (or
// was claiming) without making its session: it is claimed again first,
// which succeeds only when the claim is this machine's (or nobody's), so
// another machine's is never taken from it.
func unclaim(streams cmdutil.IO, base, beadID string) {
	client, err := beads.NewClient(base)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdutil.BDTimeout)
	_, err = client.Claim(ctx, beadID)
	cancel()
	if err != nil {
		return // another's, closed, or bd failed: left as it is
	}
	reopen(streams, base, beadID)
}

// reopen sets the bead open again in bd, and claimed by nobody: another
// machine may take it (bd update --claim).
func reopen(streams cmdutil.IO, base, beadID string) {
	client, err := beads.NewClient(base)
	if err != nil {
		fmt.Fprintf(streams.Err, "warning: bead %s stays as it is: %v\n", ui.Safe(beadID), err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdutil.BDTimeout)
	err = client.Release(ctx, beadID)
	cancel()
	if err != nil {
		fmt.Fprintf(streams.Err, "warning: bead %s: could not set it open: %v\n", ui.Safe(beadID), err)
	} else {
		fmt.Fprintf(streams.Err, "bead %s is open again\n", ui.Safe(beadID))
	}
}

// cleanWorktree removes a session's worktree, branch and owner record.
func cleanWorktree(streams cmdutil.IO, base string, sess *state.Session, beadID string, force bool) error {
	ctx := context.Background()
	repo, err := worktree.Open(ctx, base)
	if err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
	}
	wt := &worktree.Worktree{Path: sess.Worktree, Branch: sess.Branch, Base: sess.BaseBranch, BeadID: beads.SanitizeID(beadID), Session: sess.ID}
	if err := repo.Remove(ctx, wt, force); err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "%v\n(the worktree and branch are kept; --force removes them with their unmerged commits)", err)
	}
	fmt.Fprintf(streams.Err, "removed the worktree %s and branch %s\n", ui.Safe(sess.Worktree), ui.Safe(sess.Branch))
	return nil
}

// stopRunning asks the vibeteam that runs session id to stop (SIGTERM: it
// stops its tasks and saves), waits for it, and takes the lock.
func stopRunning(streams cmdutil.IO, mgr *state.Manager, id string, locked *state.LockedError) (*state.Lock, error) {
	host, _ := os.Hostname()
	if locked.Pid <= 0 || locked.Host != "" && locked.Host != host {
		return nil, cmdutil.Exitf(cmdutil.ExitUsage, "%v: cancel it there", locked)
	}
	if err := syscall.Kill(locked.Pid, syscall.SIGTERM); err != nil {
		return nil, cmdutil.Exitf(cmdutil.ExitFailed, "stop pid %d: %v", locked.Pid, err)
	}
	fmt.Fprintf(streams.Err, "stopping session %s (pid %d)…\n", id, locked.Pid)
	deadline := time.Now().Add(cancelWait)
	for {
		lock, err := mgr.Lock(id)
		if err == nil {
			return lock, nil
		}
		if !errors.As(err, new(*state.LockedError)) || time.Now().After(deadline) {
			return nil, cmdutil.Exitf(cmdutil.ExitFailed, "session %s did not stop within %s: %v", id, cancelWait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// workLanded is the commit that brought the session's bead work into its
// base branch already (a merge that was done, or under way, when the
// session stopped); "" otherwise. A session that lands on a remote
// (run --ready --remote) asks the remote: an error when it cannot.
func workLanded(base string, sess *state.Session, beadID string) (string, error) {
	if sess.Merged != "" {
		return sess.Merged, nil
	}
	if sess.Intent == nil || sess.Intent.Kind != state.IntentMerge || sess.Branch == "" {
		return "", nil
	}
	ctx := context.Background()
	repo, err := worktree.Open(ctx, base)
	if err != nil {
		return "", nil
	}
	wt := &worktree.Worktree{Path: sess.Worktree, Branch: sess.Branch, Base: sess.BaseBranch, BeadID: beads.SanitizeID(beadID), Session: sess.ID}
	if sess.Remote != "" {
		commit, _, err := repo.LandedOn(ctx, wt, sess.Remote)
		return commit, err
	}
	commit, ok, err := repo.Landed(ctx, wt)
	if err != nil || !ok {
		return "", nil
	}
	return commit, nil
}

// mergeUnderWay reports whether the session stopped in its merge: the
// merge's intent open (a kill while git ran), or the merge the last step
// that ran, and done.
func mergeUnderWay(sess *state.Session) bool {
	if in := sess.Intent; in != nil && in.Kind == state.IntentMerge {
		return true
	}
	r := sess.Runs[sess.Cursor]
	return r != nil && r.Type == workflow.StepMerge && r.Status == vocab.StepDone
}

// stepsAfter are the names of the steps of the grimoire after the one at
// the address key (its top-level step's followers): what did not run.
func stepsAfter(sess *state.Session, key string) []string {
	def := sess.WorkflowDefinition
	top, _, _ := strings.Cut(key, "/")
	top, _, _ = strings.Cut(top, ".")
	i, err := strconv.Atoi(top)
	if def == nil || err != nil || i < 0 || i >= len(def.Steps) {
		return nil
	}
	var names []string
	for _, s := range def.Steps[i+1:] {
		names = append(names, s.Label())
	}
	return names
}

// cancelLanded ends a session whose work landed on its base branch before
// it could be cancelled: it is recorded as merged, its bead closed, its
// worktree and branch (merged, so nothing is lost) removed. A cancel that
// came while the merge was under way came too late: the session is
// completed, with a note saying so (and which steps after the merge did
// not run). One that came after an earlier merge landed cancels it.
func cancelLanded(streams cmdutil.IO, mgr *state.Manager, sess *state.Session, beadID, commit string, underWay bool) error {
	now := time.Now()
	sess.Merged, sess.Intent = commit, nil
	sess.EndTime = &now
	closeReason := fmt.Sprintf("Merged into %s as %s by vibeteam session %s (cancelled after the merge)", sess.BaseBranch, commit, sess.ID)
	if underWay {
		sess.Status, sess.Error = state.StatusCompleted, ""
		sess.Note = fmt.Sprintf("a cancel came during the merge, which had landed (%s is at %s): the session completed", sess.BaseBranch, commit)
		if left := stepsAfter(sess, sess.Cursor); len(left) > 0 {
			sess.Note += "; the steps after the merge did not run: " + strings.Join(left, ", ")
		}
		sess.Cursor = ""
		closeReason = fmt.Sprintf("Merged into %s as %s by vibeteam session %s (%s)", sess.BaseBranch, commit, sess.ID, sess.Note)
	} else {
		sess.Status = state.StatusCancelled
		sess.Error = fmt.Sprintf("cancelled after its merge: the work is on %s (%s)", sess.BaseBranch, commit)
	}
	if err := mgr.Save(sess); err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
	}
	if underWay {
		fmt.Fprintf(streams.Err, "session %s completed: %s\n", sess.ID, ui.Safe(sess.Note))
	} else {
		fmt.Fprintf(streams.Err, "session %s was cancelled after its merge had landed: the work is on %s (%s)\n", sess.ID, ui.Safe(sess.BaseBranch), ui.Safe(commit))
	}
	if beadID != "" && sess.BeadSource == "bd" {
		if client, err := beads.NewClient(sess.BaseDir); err != nil {
			fmt.Fprintf(streams.Err, "warning: bead %s stays as it is: %v\n", ui.Safe(beadID), err)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), cmdutil.BDTimeout)
			err := client.Close(ctx, beadID, closeReason)
			cancel()
			if err != nil {
				fmt.Fprintf(streams.Err, "warning: bead %s: could not close it: %v\n", ui.Safe(beadID), err)
			} else {
				fmt.Fprintf(streams.Err, "bead %s is closed\n", ui.Safe(beadID))
			}
		}
	}
	if sess.Worktree == "" {
		return nil
	}
	ctx := context.Background()
	repo, err := worktree.Open(ctx, sess.BaseDir)
	if err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
	}
	wt := &worktree.Worktree{Path: sess.Worktree, Branch: sess.Branch, Base: sess.BaseBranch, BeadID: beads.SanitizeID(beadID), Session: sess.ID}
	if err := repo.Remove(ctx, wt, false); err != nil {
		fmt.Fprintf(streams.Err, "warning: the worktree %s is kept: %v\n", ui.Safe(sess.Worktree), err)
		return nil
	}
	fmt.Fprintf(streams.Err, "removed the worktree %s and branch %s (merged)\n", ui.Safe(sess.Worktree), ui.Safe(sess.Branch))
	return nil
}
