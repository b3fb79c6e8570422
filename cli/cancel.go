package cli

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
)

// cancelWait bounds the wait for a running vibeteam to stop its tasks and
// save after SIGTERM (their grace is 10 s by default).
const cancelWait = 30 * time.Second

func cancelCommand(streams IO) *ucli.Command {
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
				return exitf(ExitUsage, "cancel needs a session id (see vibeteam sessions)")
			}
			if c.Bool("force") && !c.Bool("clean") {
				return exitf(ExitUsage, "--force goes with --clean")
			}
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			mgr := state.NewManager(base)
			id, err := cmdutil.ResolveSession(mgr, c.Args().First())
			if err != nil {
				return err
			}
			lock, err := mgr.Lock(id)
			var locked *state.LockedError
			stopped := false
			if errors.As(err, &locked) {
				if lock, err = stopRunning(streams, mgr, id, locked); err != nil {
					return err
				}
				stopped = true
			} else if err != nil {
				return exitf(ExitFailed, "%v", err)
			}
			defer lock.Release()
			sess, err := mgr.Load(id)
			if err != nil {
				return cmdutil.SessionLoadError(err)
			}
			if sess.Status == state.StatusCompleted && stopped {
				// The stop came too late: its merge had landed (or every
				// step had ended), and the run completed.
				fmt.Fprintf(streams.Err, "session %s completed before the cancel could stop it", id)
				if sess.Note != "" {
					fmt.Fprintf(streams.Err, ": %s", safe(sess.Note))
				}
				fmt.Fprintln(streams.Err)
				return nil
			}
			if sess.Status == state.StatusCompleted {
				if !c.Bool("clean") || sess.Worktree == "" {
					return exitf(ExitUsage, "session %s has completed; there is nothing to cancel", id)
				}
				// Its work landed but its worktree could not be removed
				// then: --clean removes what is left, so the bead can run
				// again.
				beadID, _ := sess.Bead["id"].(string)
				return cleanWorktree(streams, base, sess, beadID, c.Bool("force"))
			}
			beadID, _ := sess.Bead["id"].(string)
			// A merge may have landed before the stop took effect: then the
			// session says so, and the bead is done, never open again with
			// its work on the base branch.
			if landed := workLanded(base, sess, beadID); landed != "" {
				return cancelLanded(streams, mgr, sess, beadID, landed, mergeUnderWay(sess))
			}
			now := time.Now()
			sess.Status, sess.EndTime = state.StatusCancelled, &now
			sess.Error = "cancelled"
			if err := mgr.Save(sess); err != nil {
				return exitf(ExitFailed, "%v", err)
			}
			fmt.Fprintf(streams.Err, "session %s cancelled\n", id)
			if bl := sess.Backlog; bl != nil {
				// The beads keep their own sessions: one waiting for a
				// review may still be wanted.
				for _, b := range bl.Beads {
					if b.Session == "" || !mgr.Exists(b.Session) {
						continue
					}
					if bs, err := mgr.Load(b.Session); err == nil && bs.Status != state.StatusCompleted && bs.Status != state.StatusCancelled {
						fmt.Fprintf(streams.Err, "bead %s keeps its session %s (%s): vibeteam cancel %s [--clean]\n", safe(b.ID), b.Session, bs.Status, b.Session)
					}
				}
			}
			if beadID != "" && sess.BeadSource == "bd" {
				if client, err := beads.NewClient(base); err != nil {
					fmt.Fprintf(streams.Err, "warning: bead %s stays as it is: %v\n", safe(beadID), err)
				} else {
					ctx, cancel := context.WithTimeout(context.Background(), bdTimeout)
					err := client.SetStatus(ctx, beadID, "open")
					cancel()
					if err != nil {
						fmt.Fprintf(streams.Err, "warning: bead %s: could not set it open: %v\n", safe(beadID), err)
					} else {
						fmt.Fprintf(streams.Err, "bead %s is open again\n", safe(beadID))
					}
				}
			}
			if sess.Worktree == "" {
				return nil
			}
			if !c.Bool("clean") {
				fmt.Fprintf(streams.Err, "its worktree is kept: %s (branch %s); vibeteam cancel %s --clean removes them\n", safe(sess.Worktree), safe(sess.Branch), id)
				return nil
			}
			return cleanWorktree(streams, base, sess, beadID, c.Bool("force"))
		},
	}
}

// cleanWorktree removes a session's worktree, branch and owner record.
func cleanWorktree(streams IO, base string, sess *state.Session, beadID string, force bool) error {
	ctx := context.Background()
	repo, err := worktree.Open(ctx, base)
	if err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	wt := &worktree.Worktree{Path: sess.Worktree, Branch: sess.Branch, Base: sess.BaseBranch, BeadID: beads.SanitizeID(beadID), Session: sess.ID}
	if err := repo.Remove(ctx, wt, force); err != nil {
		return exitf(ExitFailed, "%v\n(the worktree and branch are kept; --force removes them with their unmerged commits)", err)
	}
	fmt.Fprintf(streams.Err, "removed the worktree %s and branch %s\n", safe(sess.Worktree), safe(sess.Branch))
	return nil
}

// stopRunning asks the vibeteam that runs session id to stop (SIGTERM: it
// stops its tasks and saves), waits for it, and takes the lock.
func stopRunning(streams IO, mgr *state.Manager, id string, locked *state.LockedError) (*state.Lock, error) {
	host, _ := os.Hostname()
	if locked.Pid <= 0 || locked.Host != "" && locked.Host != host {
		return nil, exitf(ExitUsage, "%v: cancel it there", locked)
	}
	if err := syscall.Kill(locked.Pid, syscall.SIGTERM); err != nil {
		return nil, exitf(ExitFailed, "stop pid %d: %v", locked.Pid, err)
	}
	fmt.Fprintf(streams.Err, "stopping session %s (pid %d)…\n", id, locked.Pid)
	deadline := time.Now().Add(cancelWait)
	for {
		lock, err := mgr.Lock(id)
		if err == nil {
			return lock, nil
		}
		if !errors.As(err, new(*state.LockedError)) || time.Now().After(deadline) {
			return nil, exitf(ExitFailed, "session %s did not stop within %s: %v", id, cancelWait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// workLanded is the base's commit when the session's bead work is on its
// base branch already (a merge that was done, or under way, when the
// session stopped); "" otherwise.
func workLanded(base string, sess *state.Session, beadID string) string {
	if sess.Merged != "" {
		return sess.Merged
	}
	if sess.Intent == nil || sess.Intent.Kind != state.IntentMerge || sess.Branch == "" {
		return ""
	}
	ctx := context.Background()
	repo, err := worktree.Open(ctx, base)
	if err != nil {
		return ""
	}
	wt := &worktree.Worktree{Path: sess.Worktree, Branch: sess.Branch, Base: sess.BaseBranch, BeadID: beads.SanitizeID(beadID), Session: sess.ID}
	commit, ok, err := repo.Landed(ctx, wt)
	if err != nil || !ok {
		return ""
	}
	return commit
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
func cancelLanded(streams IO, mgr *state.Manager, sess *state.Session, beadID, commit string, underWay bool) error {
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
		return exitf(ExitFailed, "%v", err)
	}
	if underWay {
		fmt.Fprintf(streams.Err, "session %s completed: %s\n", sess.ID, safe(sess.Note))
	} else {
		fmt.Fprintf(streams.Err, "session %s was cancelled after its merge had landed: the work is on %s (%s)\n", sess.ID, safe(sess.BaseBranch), safe(commit))
	}
	if beadID != "" && sess.BeadSource == "bd" {
		if client, err := beads.NewClient(sess.BaseDir); err != nil {
			fmt.Fprintf(streams.Err, "warning: bead %s stays as it is: %v\n", safe(beadID), err)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), bdTimeout)
			err := client.Close(ctx, beadID, closeReason)
			cancel()
			if err != nil {
				fmt.Fprintf(streams.Err, "warning: bead %s: could not close it: %v\n", safe(beadID), err)
			} else {
				fmt.Fprintf(streams.Err, "bead %s is closed\n", safe(beadID))
			}
		}
	}
	if sess.Worktree == "" {
		return nil
	}
	ctx := context.Background()
	repo, err := worktree.Open(ctx, sess.BaseDir)
	if err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	wt := &worktree.Worktree{Path: sess.Worktree, Branch: sess.Branch, Base: sess.BaseBranch, BeadID: beads.SanitizeID(beadID), Session: sess.ID}
	if err := repo.Remove(ctx, wt, false); err != nil {
		fmt.Fprintf(streams.Err, "warning: the worktree %s is kept: %v\n", safe(sess.Worktree), err)
		return nil
	}
	fmt.Fprintf(streams.Err, "removed the worktree %s and branch %s (merged)\n", safe(sess.Worktree), safe(sess.Branch))
	return nil
}
