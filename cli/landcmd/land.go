// Package landcmd is `vibeteam land`: pushed or local branches merged into
// the base branch one at a time, through the repository's merge queue and
// gate, as a merge step merges a bead's worktree.
package landcmd

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
	"github.com/vibeteam/vibeteam/ui"
)

// Options are what `vibeteam land` is asked.
type Options struct {
	IO          cmdutil.IO
	Base        string   // the project's base dir
	Branches    []string // BRANCH..., at least one
	Onto        string   // --base; "" for the branch checked out
	Gate        string   // --gate
	NoGate      bool     // --no-gate
	GateTimeout time.Duration
}

// NewCmdLand is the `land` command. Its action gathers the Options and
// hands them to runF (nil: Run).
func NewCmdLand(streams cmdutil.IO, runF func(*Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
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
				return cmdutil.Exitf(cmdutil.ExitUsage, "land needs the branches to merge (see vibeteam land --help)")
			}
			if c.Bool("no-gate") && c.String("gate") != "" {
				return cmdutil.Exitf(cmdutil.ExitUsage, "--gate and --no-gate together: choose one")
			}
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			return runF(&Options{IO: streams, Base: base, Branches: c.Args().Slice(), Onto: c.String("base"),
				Gate: c.String("gate"), NoGate: c.Bool("no-gate"), GateTimeout: c.Duration("gate-timeout")})
		},
	}
}

// Run lands the branches of opts; a signal stops it, and the branch being
// checked does not land.
func Run(opts *Options) error {
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
	l := &lander{opts: opts, streams: opts.IO, base: opts.Base}
	code, err := l.land(ctx)
	sigMu.Lock()
	defer sigMu.Unlock()
	if sig != nil {
		return &cmdutil.ExitError{Exit: cmdutil.InterruptCode(sig)}
	}
	if err != nil {
		return err
	}
	if code != 0 {
		return &cmdutil.ExitError{Exit: code}
	}
	return nil
}

// lander lands the branches of one `vibeteam land`.
type lander struct {
	opts    *Options
	streams cmdutil.IO
	base    string
	logDir  string // the session-like name of its gate logs: land-TIME
	// gateRuns counts the gate's runs (each gets its own log).
	gateRuns atomic.Int32
}

func (l *lander) land(ctx context.Context) (int, error) {
	repo, err := worktree.Open(ctx, l.base)
	if err != nil {
		return 0, cmdutil.Exitf(cmdutil.ExitUsage, "land: %v", err)
	}
	onto := l.opts.Onto
	if onto == "" {
		if onto, err = repo.CurrentBranch(ctx); err != nil {
			return 0, cmdutil.Exitf(cmdutil.ExitUsage, "land: %v", err)
		}
	}
	onto = strings.TrimPrefix(onto, "refs/heads/")
	if ref, err := repo.BranchRef(ctx, onto); err != nil || ref != "refs/heads/"+onto {
		return 0, cmdutil.Exitf(cmdutil.ExitUsage, "land: the base %s is not a local branch", onto)
	}
	gate := l.opts.Gate
	if gate == "" && !l.opts.NoGate {
		g := cmdutil.ProjectGate(l.base)
		if g == nil {
			return 0, cmdutil.Exitf(cmdutil.ExitUsage, "land: %s cannot be read (vibeteam validate says why); --gate or --no-gate decides without it", ".vibeteam/config.yaml")
		}
		gate = *g
	}
	// Every branch is known before anything lands.
	refs := make([]string, len(l.opts.Branches))
	for i, name := range l.opts.Branches {
		if refs[i], err = repo.BranchRef(ctx, name); err != nil {
			return 0, cmdutil.Exitf(cmdutil.ExitUsage, "land: %v", err)
		}
	}
	l.logDir = "land-" + time.Now().UTC().Format("20060102-150405")
	out := l.streams.Out
	if gate != "" {
		fmt.Fprintf(out, "landing %d branch(es) on %s, each checked by: %s\n", len(refs), ui.Safe(onto), ui.Safe(excerpt.FirstLineMarked(gate)))
	} else {
		fmt.Fprintf(out, "landing %d branch(es) on %s, without a gate\n", len(refs), ui.Safe(onto))
	}
	retries, size := 0, beads.DefaultBatch
	if cfg, err := beads.LoadConfig(l.base); err == nil {
		retries = cfg.GateRetries
		if cfg.Batch > 0 {
			size = cfg.Batch
		}
	}
	items, lasts := l.items(refs, onto, gate, retries)
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
		if rc, stop := l.report(ctx, l.opts.Branches[i], onto, res, err, lasts[i]); stop {
			return rc, nil
		} else if rc != 0 {
			code = rc
		}
	}
	return code, nil
}

// items are the merges of the branches refs into onto, each gated by
// gate; lasts get the last gate run of each.
func (l *lander) items(refs []string, onto, gate string, retries int) ([]worktree.MergeItem, []*core.GateResult) {
	items := make([]worktree.MergeItem, len(refs))
	lasts := make([]*core.GateResult, len(refs))
	for i, ref := range refs {
		name := l.opts.Branches[i]
		items[i] = worktree.MergeItem{
			Worktree: &worktree.Worktree{Branch: ref, Base: onto},
			Message:  fmt.Sprintf("Merge %s into %s\n\nLanded by vibeteam land.", branchName(ref), onto),
			Retries:  retries,
			Queued: func() {
				fmt.Fprintf(l.streams.Out, "  %s: waiting for the merge queue: another merge into %s is under way\n", ui.Safe(name), ui.Safe(onto))
			},
		}
		if gate != "" {
			items[i].Gate = func(ctx context.Context, dir string, try worktree.GateTry) (bool, error) {
				res, err := l.gate(ctx, gate, l.opts.GateTimeout, name, dir, try)
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
		fmt.Fprintf(out, "✗ %s: interrupted; %s did not get it\n", ui.Safe(name), ui.Safe(onto))
		return cmdutil.ExitInterrupted, true
	case err != nil:
		fmt.Fprintf(out, "✗ %s: %v\n", ui.Safe(name), err)
		return cmdutil.ExitFailed, true
	case res.UpToDate:
		fmt.Fprintf(out, "✓ %s: already in %s\n", ui.Safe(name), ui.Safe(onto))
	case res.Merged:
		line := fmt.Sprintf("✓ %s: landed on %s as %s", ui.Safe(name), ui.Safe(onto), ui.ShortCommit(res.Commit))
		if len(res.Batch) > 1 {
			line += fmt.Sprintf(", in a batch of %d", len(res.Batch))
		} else if last != nil {
			line += ", " + ui.GateVerdict(true, 0, "", last.Duration)
			if res.Attempts > 1 {
				line += fmt.Sprintf(" (try %d: %s moved meanwhile)", res.Attempts, ui.Safe(onto))
			}
		}
		fmt.Fprintln(out, line)
	case res.GateRed:
		line := fmt.Sprintf("✗ %s: not landed: ", ui.Safe(name))
		if last != nil {
			line += ui.GateVerdict(false, last.ExitCode, last.Reason, last.Duration)
		} else {
			line += "gate red"
		}
		if len(res.Batch) > 1 {
			line += fmt.Sprintf(" (found red in the batch of %d, gated on its own)", len(res.Batch))
		}
		fmt.Fprintln(out, line)
		if last != nil {
			for _, s := range strings.Split(core.FailureTail(last.Output), "\n") {
				fmt.Fprintf(out, "  | %s\n", ui.SafeLine(s))
			}
			if last.LogPath != "" {
				fmt.Fprintf(out, "  log: %s\n", ui.Safe(last.LogPath))
			}
		}
		return cmdutil.ExitParked, false
	case len(res.Conflicts) > 0:
		var paths []string
		for _, cf := range res.Conflicts {
			paths = append(paths, cf.Path)
		}
		fmt.Fprintf(out, "✗ %s: not landed: it conflicts with %s in %s\n", ui.Safe(name), ui.Safe(onto), ui.Safe(strings.Join(paths, ", ")))
		return cmdutil.ExitParked, false
	case res.Refused != "":
		fmt.Fprintf(out, "✗ %s: not landed: git refused: %s\n", ui.Safe(name), ui.Safe(excerpt.FirstLineMarked(res.Refused)))
		return cmdutil.ExitParked, false
	case res.Moving != "":
		fmt.Fprintf(out, "✗ %s: not landed: %s\n", ui.Safe(name), ui.Safe(res.Moving))
		return cmdutil.ExitParked, false
	default:
		fmt.Fprintf(out, "✗ %s: the merge did not happen, for no reason git gave\n", ui.Safe(name))
		return cmdutil.ExitFailed, true
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
	fmt.Fprintf(l.streams.Out, "  %s: gate on %s at %s", ui.Safe(label), ui.Safe(try.Base), ui.ShortCommit(try.Commit))
	if try.Attempt > 1 {
		fmt.Fprintf(l.streams.Out, " (try %d: %s moved during the last)", try.Attempt, ui.Safe(try.Base))
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
