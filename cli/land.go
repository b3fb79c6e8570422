package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/worktree"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

func landCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:      "land",
		Usage:     "merge branches that are already pushed (or local) into the base branch, one at a time, through the repository's merge queue and gate",
		ArgsUsage: "BRANCH...",
		Description: `Each BRANCH (a local branch, or a remote-tracking one such as
origin/vibeteam/bd-7: fetch first) is merged into the base branch as a merge
step merges a bead's worktree: a merge commit computed without touching
anything, checked by the gate in a temporary worktree, then landed — the
base's ref, or your checkout of it fast-forwarded, never your local changes.
They land in the order given, each on top of the ones before, through the
same queue as every vibeteam merging in the repository; if the base moves
while a gate runs, that branch is merged and gated again.

The gate is --gate COMMAND, else .vibeteam/config.yaml's merge.gate; --no-gate
runs none. A branch whose gate is red, that conflicts, or that git refuses is
left out (the base keeps what it had) and the next one is tried; the gate's
output goes to .vibeteam/logs/land-TIME/.

Pushing the base afterwards is yours (git push origin main).

Exit codes: 0 every branch landed (or was in the base already); 3 one or
more did not (red gate, conflict, refusal); 1 git failed; 2 usage error or an
unknown branch (nothing landed); 130/143 interrupted (the branch being
checked did not land).`,
		Flags: []ucli.Flag{
			cmdutil.BaseDirFlag,
			&ucli.StringFlag{Name: "base", Usage: "land on `BRANCH` (default: the branch checked out in the base dir)"},
			&ucli.StringFlag{Name: "gate", Usage: "check each merge with `COMMAND` (sh -c, in a temporary worktree at the merge commit; exit 0 lands it)"},
			&ucli.BoolFlag{Name: "no-gate", Usage: "no gate, even if config.yaml sets one"},
			&ucli.DurationFlag{Name: "gate-timeout", Value: 30 * time.Minute, Usage: "a gate that runs longer is red"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return exitf(ExitUsage, "land needs the branches to merge (see vibeteam land --help)")
			}
			if c.Bool("no-gate") && c.String("gate") != "" {
				return exitf(ExitUsage, "--gate and --no-gate together: choose one")
			}
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var sig os.Signal
			var sigMu sync.Mutex
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(sigs)
			go func() {
				s, ok := <-sigs
				if ok {
					sigMu.Lock()
					sig = s
					sigMu.Unlock()
					stop()
				}
			}()
			l := &lander{streams: streams, base: base}
			code, err := l.land(ctx, c)
			sigMu.Lock()
			defer sigMu.Unlock()
			if sig != nil {
				return &exitError{Code: cmdutil.InterruptCode(sig)}
			}
			if err != nil {
				return err
			}
			if code != 0 {
				return &exitError{Code: code}
			}
			return nil
		},
	}
}

// lander lands the branches of one `vibeteam land`.
type lander struct {
	streams IO
	base    string
	logDir  string // the session-like name of its gate logs: land-TIME
	// gateRuns counts the gate's runs (each gets its own log).
	gateRuns atomic.Int32
}

func (l *lander) land(ctx context.Context, c *ucli.Context) (int, error) {
	repo, err := worktree.Open(ctx, l.base)
	if err != nil {
		return 0, exitf(ExitUsage, "land: %v", err)
	}
	onto := c.String("base")
	if onto == "" {
		if onto, err = repo.CurrentBranch(ctx); err != nil {
			return 0, exitf(ExitUsage, "land: %v", err)
		}
	}
	onto = strings.TrimPrefix(onto, "refs/heads/")
	if ref, err := repo.BranchRef(ctx, onto); err != nil || ref != "refs/heads/"+onto {
		return 0, exitf(ExitUsage, "land: the base %s is not a local branch", onto)
	}
	gate := c.String("gate")
	if gate == "" && !c.Bool("no-gate") {
		g := cmdutil.ProjectGate(l.base)
		if g == nil {
			return 0, exitf(ExitUsage, "land: %s cannot be read (vibeteam validate says why); --gate or --no-gate decides without it", ".vibeteam/config.yaml")
		}
		gate = *g
	}
	// Every branch is known before anything lands.
	refs := make([]string, c.NArg())
	for i, name := range c.Args().Slice() {
		if refs[i], err = repo.BranchRef(ctx, name); err != nil {
			return 0, exitf(ExitUsage, "land: %v", err)
		}
	}
	l.logDir = "land-" + time.Now().UTC().Format("20060102-150405")
	out := l.streams.Out
	if gate != "" {
		fmt.Fprintf(out, "landing %d branch(es) on %s, each checked by: %s\n", len(refs), safe(onto), safe(excerpt.FirstLineMarked(gate)))
	} else {
		fmt.Fprintf(out, "landing %d branch(es) on %s, without a gate\n", len(refs), safe(onto))
	}
	retries, size := 0, beads.DefaultBatch
	if cfg, err := beads.LoadConfig(l.base); err == nil {
		retries = cfg.GateRetries
		if cfg.Batch > 0 {
			size = cfg.Batch
		}
	}
	items, lasts := l.items(c, refs, onto, gate, retries)
	var results []worktree.MergeResult
	var errs []error
	if size > 1 && len(items) > 1 {
		// Batched: they wait together, the first given the oldest.
		q := repo.NewBatcher(size)
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.Run(ctx)
		}()
		results, errs = q.MergeAll(ctx, items)
		q.Close()
		<-done
	}
	code := 0
	for i, it := range items {
		var res worktree.MergeResult
		var err error
		if results != nil {
			res, err = results[i], errs[i]
		} else {
			res, err = repo.MergeWith(ctx, it.Worktree, it.Message, worktree.MergeOptions{Gate: it.Gate, Queued: it.Queued, Retries: retries})
		}
		if rc, stop := l.report(ctx, c.Args().Get(i), onto, res, err, lasts[i]); stop {
			return rc, nil
		} else if rc != 0 {
			code = rc
		}
	}
	return code, nil
}

// items are the merges of the branches refs into onto, each gated by
// gate; lasts get the last gate run of each.
func (l *lander) items(c *ucli.Context, refs []string, onto, gate string, retries int) ([]worktree.MergeItem, []*core.GateResult) {
	items := make([]worktree.MergeItem, len(refs))
	lasts := make([]*core.GateResult, len(refs))
	for i, ref := range refs {
		name := c.Args().Get(i)
		items[i] = worktree.MergeItem{
			Worktree: &worktree.Worktree{Branch: ref, Base: onto},
			Message:  fmt.Sprintf("Merge %s into %s\n\nLanded by vibeteam land.", branchName(ref), onto),
			Retries:  retries,
			Queued: func() {
				fmt.Fprintf(l.streams.Out, "  %s: waiting for the merge queue: another merge into %s is under way\n", safe(name), safe(onto))
			},
		}
		if gate != "" {
			items[i].Gate = func(ctx context.Context, dir string, try worktree.GateTry) (bool, error) {
				res, err := l.gate(ctx, gate, c.Duration("gate-timeout"), name, dir, try)
				lasts[i] = &res
				return res.Green, err
			}
		}
	}
	return items, lasts
}

// branchName is a branch's ref without refs/heads/ or refs/remotes/.
func branchName(ref string) string {
	return strings.TrimPrefix(strings.TrimPrefix(ref, "refs/heads/"), "refs/remotes/")
}

// report says how one branch's merge went: the exit code it gives, and
// stop when nothing after it may be said (interrupted, git failed).
func (l *lander) report(ctx context.Context, name, onto string, res worktree.MergeResult, err error, last *core.GateResult) (int, bool) {
	out := l.streams.Out
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(out, "✗ %s: interrupted; %s did not get it\n", safe(name), safe(onto))
		return ExitInterrupted, true
	case err != nil:
		fmt.Fprintf(out, "✗ %s: %v\n", safe(name), err)
		return ExitFailed, true
	case res.UpToDate:
		fmt.Fprintf(out, "✓ %s: already in %s\n", safe(name), safe(onto))
	case res.Merged:
		line := fmt.Sprintf("✓ %s: landed on %s as %s", safe(name), safe(onto), shortCommit(res.Commit))
		if len(res.Batch) > 1 {
			line += fmt.Sprintf(", in a batch of %d", len(res.Batch))
		} else if last != nil {
			line += ", " + gateVerdict(true, 0, "", last.Duration)
			if res.Attempts > 1 {
				line += fmt.Sprintf(" (try %d: %s moved meanwhile)", res.Attempts, safe(onto))
			}
		}
		fmt.Fprintln(out, line)
	case res.GateRed:
		line := fmt.Sprintf("✗ %s: not landed: ", safe(name))
		if last != nil {
			line += gateVerdict(false, last.ExitCode, last.Reason, last.Duration)
		} else {
			line += "gate red"
		}
		if len(res.Batch) > 1 {
			line += fmt.Sprintf(" (found red in the batch of %d, gated on its own)", len(res.Batch))
		}
		fmt.Fprintln(out, line)
		if last != nil {
			for _, s := range strings.Split(core.FailureTail(last.Output), "\n") {
				fmt.Fprintf(out, "  | %s\n", safeLine(s))
			}
			if last.LogPath != "" {
				fmt.Fprintf(out, "  log: %s\n", safe(last.LogPath))
			}
		}
		return ExitParked, false
	case len(res.Conflicts) > 0:
		var paths []string
		for _, cf := range res.Conflicts {
			paths = append(paths, cf.Path)
		}
		fmt.Fprintf(out, "✗ %s: not landed: it conflicts with %s in %s\n", safe(name), safe(onto), safe(strings.Join(paths, ", ")))
		return ExitParked, false
	case res.Refused != "":
		fmt.Fprintf(out, "✗ %s: not landed: git refused: %s\n", safe(name), safe(excerpt.FirstLineMarked(res.Refused)))
		return ExitParked, false
	case res.Moving != "":
		fmt.Fprintf(out, "✗ %s: not landed: %s\n", safe(name), safe(res.Moving))
		return ExitParked, false
	default:
		fmt.Fprintf(out, "✗ %s: the merge did not happen, for no reason git gave\n", safe(name))
		return ExitFailed, true
	}
	return 0, false
}

// gate runs the gate on one merge commit, its output to a log file.
func (l *lander) gate(ctx context.Context, gate string, timeout time.Duration, name, dir string, try worktree.GateTry) (core.GateResult, error) {
	label, logName := name, name+".gate-"+strconv.Itoa(try.Attempt)
	if len(try.Batch) > 1 {
		names := make([]string, len(try.Batch))
		for i, b := range try.Batch {
			names[i] = branchName(b)
		}
		label = fmt.Sprintf("batch of %d (%s)", len(names), strings.Join(names, ", "))
	}
	if n := l.gateRuns.Add(1); n > 1 {
		// Each run its own log: a batch gates a branch more than once.
		logName = fmt.Sprintf("%s.gate-%d-%d", name, try.Attempt, n)
	}
	fmt.Fprintf(l.streams.Out, "  %s: gate on %s at %s", safe(label), safe(try.Base), shortCommit(try.Commit))
	if try.Attempt > 1 {
		fmt.Fprintf(l.streams.Out, " (try %d: %s moved during the last)", try.Attempt, safe(try.Base))
	}
	fmt.Fprintln(l.streams.Out)
	mgr := state.NewManager(l.base)
	path := mgr.TaskLogPath(l.logDir, logName)
	var f *os.File
	if err := os.MkdirAll(mgr.LogDir(l.logDir), 0o700); err == nil {
		f, _ = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	}
	var mu sync.Mutex
	res, err := core.RunGate(ctx, core.GateSpec{
		Command: gate, Dir: dir, Timeout: timeout,
		Env: map[string]string{
			"VIBETEAM_GATE_ATTEMPT": strconv.Itoa(try.Attempt),
			"VIBETEAM_GATE_BASE":    try.Base,
			"VIBETEAM_GATE_BRANCH":  name,
			"VIBETEAM_GATE_COMMIT":  try.Commit,
		},
		Log: func(p []byte) {
			mu.Lock()
			defer mu.Unlock()
			if f != nil {
				_, _ = f.Write(state.RedactBytes(p))
			}
		},
	})
	if f != nil {
		_ = f.Close()
		res.LogPath = path
	}
	return res, err
}
