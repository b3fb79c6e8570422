package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/backlog"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/core/worktree"
	"github.com/vibeteam/vibeteam/internal/excerpt"
	"github.com/vibeteam/vibeteam/ui"
)

// backlogFlags are run's flags for a whole backlog at once.
func backlogFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "ready", Usage: "work every ready bead (bd ready), each in its own worktree and session, picking up the beads their blockers' closing makes ready; with FILE|NAME every bead runs that grimoire, else each gets its own"},
		&ucli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 2, Usage: "with --ready: run at most `N` beads at once"},
		&ucli.StringSliceFlag{Name: "label", Usage: "with --ready: only the beads that have label `L` (repeatable: all of them)"},
		&ucli.IntFlag{Name: "limit", Usage: "with --ready: take at most `K` beads (0: all)"},
		&ucli.StringFlag{Name: "remote", Usage: "with --ready: several machines work one backlog and land on git remote `NAME`'s base: each bead is claimed in bd first (one another machine claimed is skipped), its merge is fetched, merged and gated on the remote's base and pushed as a fast-forward of exactly what the gate saw (never forced; a rejected push is merged and gated again), and the bead closes once the push is accepted"},
	}
}

// backlogRun is one `run --ready`, or its resume.
type backlogRun struct {
	sandbox *sandbox.Config // every bead's (sandboxFor); nil: none
	// opts are the run's options, read and checked once (runOptions):
	// each bead's session starts from a copy.
	opts    core.RunOptions
	c       *ucli.Context
	streams IO
	base    string
	reg     *adapters.Registry
	client  *beads.Client
	mgr     *state.Manager
	sess    *state.Session
	board   *ui.Board
	events  *eventsOut // --events
	vars    map[string]string
	// secret are the variables that are secrets besides those this
	// command's --set-env and --set-file name: those a resumed backlog
	// had saved as ***.
	secret []string

	mu      sync.Mutex // guards sess.Backlog's records
	saveErr error

	// listed are the beads as bd ready gave them, and the grimoires
	// chosen for them, by bead id.
	prepMu   sync.Mutex
	listed   map[string]map[string]any
	defs     map[string]*workflow.Definition
	grimoire *workflow.Definition // the one GRIMOIRE given, if any
	// readyIDs are the ready beads as bd last listed them (the run's
	// labels, no epics); taken are those the run has taken (or failed to
	// prepare): the list is asked of bd again only when none is left to
	// take or a close may have changed it (point of few bd calls a bead).
	readyIDs []string
	taken    map[string]bool
	running  atomic.Int32 // beads whose run has not returned
	// closer closes the completed beads, a few at a time, and the epics
	// their closes make eligible.
	closer *beads.Closer

	ctrlMu sync.Mutex
	ctrls  map[string]*core.SessionController // running beads' sessions

	// meter is the whole run's spend against --max-cost/--max-tokens;
	// every bead's session counts against it.
	meter  *budget.Meter
	meters sync.Map // bead id → its session's meter (*budget.Meter): its spend as it streams
	notify *notifier
	// waitLimits is --wait-limits: how long a limited bead may wait for
	// its reset to be continued in this run.
	waitLimits time.Duration
	// queue is the run's merge queue, which batches the beads' merges
	// that wait together (config.yaml merge.batch); nil: one at a time.
	queue *worktree.Batcher
}

// checkBacklogFlags refuses the flags that do not go with --ready, and
// the --ready flags without it.
func checkBacklogFlags(c *ucli.Context) error {
	if !c.Bool("ready") {
		for _, f := range []string{"jobs", "label", "limit", "remote"} {
			if c.IsSet(f) {
				return exitf(ExitUsage, "--%s goes with --ready", f)
			}
		}
		return nil
	}
	for _, f := range []string{"bead", "bead-file", "force"} {
		if c.IsSet(f) {
			return exitf(ExitUsage, "--ready works the beads bd calls ready; --%s is for one bead", f)
		}
	}
	if c.NArg() > 1 {
		return exitf(ExitUsage, "run --ready takes at most one grimoire (FILE|NAME); without one each bead gets its own")
	}
	if c.Int("jobs") < 1 {
		return exitf(ExitUsage, "--jobs must be at least 1, not %d", c.Int("jobs"))
	}
	if c.Int("limit") < 0 {
		return exitf(ExitUsage, "--limit must be 0 (all) or more, not %d", c.Int("limit"))
	}
	return nil
}

// runBacklog is `run [GRIMOIRE] --ready`.
func runBacklog(c *ucli.Context, streams IO, sigs *interrupts, reg *adapters.Registry, opts core.RunOptions) error {
	base, vars := opts.BaseDir, opts.Vars
	br, err := newBacklogRun(c, streams, reg, opts)
	if err != nil {
		return err
	}
	defer br.close()
	if name := c.Args().First(); name != "" {
		def, err := cmdutil.LoadDefinition(name, base, loadOptions(c, reg, base))
		if err != nil {
			return err
		}
		if def.Kind != workflow.KindGrimoire {
			return exitf(ExitUsage, "run --ready runs a grimoire on each bead; %s is a stage workflow", def.Source)
		}
		br.grimoire = def
	}
	id, err := br.mgr.NewID()
	if err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	lock, err := br.mgr.Lock(id)
	if err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	defer lock.Release()
	name := "backlog"
	if br.grimoire != nil {
		name = "backlog: " + br.grimoire.ID
	}
	br.sess = &state.Session{
		ID: id, Workflow: name, Status: state.StatusRunning, BaseDir: base, StartTime: time.Now(), Vars: vars,
		Tasks: map[string]*state.TaskRecord{}, TaskStatus: map[string]state.TaskStatus{}, History: []state.HistoryEntry{},
		Backlog: &state.Backlog{Jobs: c.Int("jobs"), Labels: c.StringSlice("label"), Limit: c.Int("limit"), Base: c.String("base"), Remote: c.String("remote")},
	}
	spend := maxSpend(c)
	br.sess.Backlog.MaxTokens, br.sess.Backlog.MaxCostUSD = spend.Tokens, spend.CostUSD
	if br.grimoire != nil {
		br.sess.Backlog.Grimoire = c.Args().First()
	}
	if err := br.mgr.Save(br.sess); err != nil {
		return exitf(ExitFailed, "%v", err)
	}
	return br.execute(sigs, nil)
}

// resumeBacklog continues a backlog session: the beads it left running
// resume first (and, at a terminal, those waiting for a person are asked
// again), then it goes on with the ready ones.
func resumeBacklog(c *ucli.Context, streams IO, sigs *interrupts, reg *adapters.Registry, sess *state.Session, opts core.RunOptions) error {
	base := opts.BaseDir
	vars, secret, err := backlogVars(c, sess)
	if err != nil {
		return err
	}
	opts.Vars = vars
	br, err := newBacklogRun(c, streams, reg, opts)
	if err != nil {
		return err
	}
	defer br.close()
	br.secret = secret
	lock, err := br.mgr.Lock(sess.ID)
	if err != nil {
		return exitf(ExitUsage, "%v", err)
	}
	defer lock.Release()
	sess.Status, sess.EndTime, sess.Error = state.StatusRunning, nil, ""
	if spend := maxSpend(c); !spend.IsZero() {
		sess.Backlog.MaxTokens, sess.Backlog.MaxCostUSD = spend.Tokens, spend.CostUSD
	}
	br.sess = sess
	if name := sess.Backlog.Grimoire; name != "" {
		def, err := cmdutil.LoadDefinition(name, base, loadOptions(c, reg, base))
		if err != nil {
			return err
		}
		br.grimoire = def
	}
	var again []*state.BacklogBead
	atTTY := br.board.Prompter != nil
	for _, b := range sess.Backlog.Beads {
		switch {
		case backlog.Unfinished(b.Status):
			again = append(again, b)
		case atTTY && (b.Status == string(state.StatusWaiting) || b.Status == string(state.StatusPendingMerge)):
			again = append(again, b)
		}
	}
	return br.execute(sigs, again)
}

// backlogVars are the variables a resumed backlog runs its beads with:
// those it was run with, and this command's --set, --set-env and
// --set-file over them. A secret was saved as ***: it must be given again
// (--set-env, --set-file), or be in an environment variable of its name,
// as a resumed session's are; secret names those that were.
func backlogVars(c *ucli.Context, sess *state.Session) (map[string]string, []string, error) {
	given, _, err := templateVars(c)
	if err != nil {
		return nil, nil, err
	}
	vars := map[string]string{}
	var secret, missing, found []string
	for k, v := range sess.Vars {
		if v == state.Redacted {
			secret = append(secret, k)
			if _, ok := given[k]; ok {
				continue
			}
			if real, ok := os.LookupEnv(k); ok {
				v = real
				found = append(found, real)
			} else {
				missing = append(missing, k)
			}
		}
		vars[k] = v
	}
	maps.Copy(vars, given)
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, nil, exitf(ExitUsage, "session %s: the secret variable(s) %s were saved as ***: give them again (--set-env NAME, --set-file key=PATH) to resume", sess.ID, strings.Join(missing, ", "))
	}
	state.AddSecrets(found)
	return vars, secret, nil
}

func newBacklogRun(c *ucli.Context, streams IO, reg *adapters.Registry, opts core.RunOptions) (_ *backlogRun, err error) {
	base, vars := opts.BaseDir, opts.Vars
	if err := warnOpenDirs(streams, base); err != nil {
		return nil, err
	}
	client, err := beads.NewClient(base)
	if err != nil {
		return nil, exitf(ExitUsage, "run --ready needs bd itself: it asks bd which beads are ready, claims and closes them; %v. "+
			"Without bd, one bead at a time runs from a file: vibeteam run GRIMOIRE --bead-file F.json", err)
	}
	repo, err := openRepo(context.Background(), base)
	if err != nil {
		// Said once, rather than as the failure of every bead.
		return nil, exitf(ExitUsage, "run --ready works each bead in a git worktree: %v", err)
	}
	if c.IsSet("remote") {
		if err := repo.CheckRemote(context.Background(), c.String("remote")); err != nil {
			return nil, exitf(ExitUsage, "--remote: %v", err)
		}
	}
	br := &backlogRun{
		c: c, streams: streams, base: base, reg: reg, client: client, vars: vars, opts: opts,
		waitLimits: opts.WaitLimits,
		mgr:        state.NewManager(base),
		listed:     map[string]map[string]any{}, defs: map[string]*workflow.Definition{}, taken: map[string]bool{},
		ctrls: map[string]*core.SessionController{},
	}
	br.board = ui.NewBoard(streams.UI(), &br.mu)
	defer func() {
		if err != nil {
			br.close()
		}
	}()
	if br.events, err = openEvents(streams, c.String("events")); err != nil {
		return nil, exitf(ExitUsage, "%v", err)
	}
	client.Notice = func(l string) { br.board.Line("bd: " + safe(l)) }
	if br.notify, err = notifierFor(c, base, func(w string) { br.board.Line("warning: " + safe(w)) }); err != nil {
		return nil, err
	}
	if br.sandbox, err = sandboxFor(c, func(w string) { br.board.Line("warning: " + safe(w)) }, base, nil, true, nil); err != nil {
		return nil, err
	}
	if opts.Interaction == engine.InteractionAsk && !opts.ForceHeadless {
		if tty, err := ttyOf(streams); err == nil {
			br.board.Prompter = ui.NewPrompter(tty, br.board)
		}
	}
	return br, nil
}

// close ends the board and closes the --events file.
func (br *backlogRun) close() {
	br.board.Close()
	br.events.Close()
}

// execute schedules the backlog to its end and says how it went.
func (br *backlogRun) execute(sigs *interrupts, again []*state.BacklogBead) error {
	if s := sigs.attach(); s != nil {
		br.sess.Status = state.StatusCancelled
		_ = br.mgr.Save(br.sess)
		return exitf(cmdutil.InterruptCode(s), "interrupted before the backlog started; continue with: vibeteam resume %s", br.sess.ID)
	}
	if err := br.syncRemote(); err != nil {
		return err
	}
	br.meterBeads(again)
	br.board.Start(br.sess, br.meter, br.liveSpend)
	err := br.schedule(sigs, again)
	sig := sigs.got()

	br.mu.Lock()
	n := tallyBeads(br.sess.Backlog)
	// A spent budget stops the backlog: what is still ready waits for a
	// person to raise it (resume --max-cost …).
	spent, _ := br.meter.Exceeded()
	saveErr := br.endSession(n, sig, err, spent)
	summary := backlogSummary(br.sess.Backlog, false)
	br.mu.Unlock()

	fmt.Fprint(br.streams.Err, summary)
	if sig == nil && err == nil {
		if lines := br.stillBlocked(); len(lines) > 0 {
			fmt.Fprintf(br.streams.Err, "still blocked (bd blocked), not taken:\n%s\n", strings.Join(lines, "\n"))
		}
	}
	if keep := br.c.Int("keep-sessions"); keep > 0 {
		_ = br.mgr.Prune(max(keep, len(br.sess.Backlog.Beads)+1))
	}
	return br.exitFor(n, sig, err, saveErr, spent)
}

// syncRemote fetches the --remote's base, and brings the local one up to
// it: the beads' worktrees start from what the remote has.
func (br *backlogRun) syncRemote() error {
	bl := br.sess.Backlog
	if bl.Remote == "" {
		return nil
	}
	ctx := context.Background()
	repo, err := openRepo(ctx, br.base)
	if err == nil {
		_, err = repo.SyncRemote(ctx, bl.Remote, bl.Base)
	}
	if err != nil {
		br.sess.Status, br.sess.Error = state.StatusFailed, err.Error()
		_ = br.mgr.Save(br.sess)
		return exitf(ExitFailed, "backlog %s: --remote %s: %v; continue with: vibeteam resume %s", br.sess.ID, bl.Remote, err, br.sess.ID)
	}
	return nil
}

// meterBeads sets up the backlog's meter: what the beads that will not run
// again spent counts; the others' sessions add theirs as they resume.
func (br *backlogRun) meterBeads(again []*state.BacklogBead) {
	bl := br.sess.Backlog
	br.meter = budget.NewMeter(budget.Limit{Tokens: bl.MaxTokens, CostUSD: bl.MaxCostUSD}, nil).Named("the backlog's --max-cost/--max-tokens")
	for _, b := range bl.Beads {
		if !slices.Contains(again, b) {
			br.meter.Add(b.Tokens, b.CostUSD)
		}
	}
}

// liveSpend is a running bead's spend so far, as its agents stream it.
func (br *backlogRun) liveSpend(id string) (tokens int64, usd float64, ok bool) {
	m, ok := br.meters.Load(id)
	if !ok {
		return 0, 0, false
	}
	tokens, usd = m.(*budget.Meter).Spent()
	return tokens, usd, true
}

// schedule runs the beads until every ready one has run, the budget is
// spent or an interrupt stops them, then closes what completed.
func (br *backlogRun) schedule(sigs *interrupts, again []*state.BacklogBead) error {
	bl := br.sess.Backlog
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopWatch := sigs.watch(func(s os.Signal) {
		br.board.Line(fmt.Sprintf("%s: stopping every bead and saving the sessions (again to kill them now)", s))
		cancel()
	}, func() {
		br.board.Line("killing every task now")
		br.ctrlMu.Lock()
		for _, ctrl := range br.ctrls {
			ctrl.Kill()
		}
		br.ctrlMu.Unlock()
	})
	var promptDone <-chan struct{}
	if p := br.board.Prompter; p != nil {
		promptDone = p.Done()
		go p.Run(ctx, nil)
	}
	sched := backlog.New(bl, backlog.Config{
		Jobs:       bl.Jobs,
		Limit:      bl.Limit,
		WaitLimits: br.waitLimits,
		Exhausted: func() bool {
			_, over := br.meter.Exceeded()
			return over
		},
		Ready:   br.ready,
		Prepare: br.prepare,
		Run:     br.runBead,
		Changed: br.changed,
		Lock:    &br.mu,
	})
	br.closer = beads.NewCloser(br.client, closeDelay, br.closeRefused)
	br.closeOwed(ctx)
	queueDone := br.startQueue(ctx)
	err := sched.Run(ctx, again)
	// Every bead's run has returned: no merge is asked any more.
	if br.queue != nil {
		br.queue.Close()
		<-queueDone
	}
	cancel()
	stopWatch()
	// What completed is closed, whatever stopped the run.
	closeCtx, closeDone := context.WithTimeout(context.Background(), bdTimeout)
	br.closer.Stop(closeCtx)
	closeDone()
	if promptDone != nil {
		<-promptDone
	}
	br.board.Finish()
	return err
}

// startQueue starts the run's merge queue when merges batch (merge.batch
// above 1); the channel is closed when it has ended after Close.
func (br *backlogRun) startQueue(ctx context.Context) chan struct{} {
	done := make(chan struct{})
	size := beads.DefaultBatch
	if cfg, err := beads.LoadConfig(br.base); err == nil && cfg.Batch > 0 {
		size = cfg.Batch
	}
	repo, err := openRepo(ctx, br.base)
	remote := br.sess.Backlog.Remote
	if (size <= 1 && remote == "") || err != nil {
		close(done)
		return done
	}
	br.queue = repo.NewBatcher(size).Remote(remote)
	go func() {
		defer close(done)
		br.queue.Run(ctx)
	}()
	return done
}

// beadTally counts the beads of a backlog by how they ended.
type beadTally struct{ failed, parked, completed int }

func tallyBeads(bl *state.Backlog) beadTally {
	var n beadTally
	for _, b := range bl.Beads {
		switch b.Status {
		case string(state.StatusCompleted):
			n.completed++
		case string(state.StatusFailed):
			n.failed++
		case state.BeadSkipped:
		case string(state.StatusCancelled), string(state.StatusRunning), state.BeadStarting:
		default:
			n.parked++
		}
	}
	return n
}

// endSession saves the backlog's session with the status its beads, an
// interrupt or an error give it.
func (br *backlogRun) endSession(n beadTally, sig os.Signal, err error, spent string) error {
	now := time.Now()
	sess := br.sess
	sess.EndTime = &now
	switch {
	case sig != nil:
		sess.Status = state.StatusCancelled
	case err != nil:
		sess.Status, sess.Error = state.StatusFailed, err.Error()
	case n.failed > 0:
		sess.Status = state.StatusFailed
	case n.parked > 0 || spent != "":
		sess.Status = state.StatusWaiting
	default:
		sess.Status = state.StatusCompleted
	}
	saveErr := br.mgr.Save(sess)
	if saveErr == nil {
		saveErr = br.saveErr
	}
	return saveErr
}

// exitFor is how the backlog's run ends for the shell: its exit code and
// what to do next.
func (br *backlogRun) exitFor(n beadTally, sig os.Signal, err, saveErr error, spent string) error {
	id, beads := br.sess.ID, len(br.sess.Backlog.Beads)
	switch {
	case saveErr != nil:
		return exitf(ExitFailed, "backlog %s: %v", id, saveErr)
	case sig != nil:
		return exitf(cmdutil.InterruptCode(sig), "interrupted; backlog %s saved, continue with: vibeteam resume %s", id, id)
	case err != nil:
		return exitf(ExitFailed, "backlog %s: %v", id, err)
	case beads == 0:
		fmt.Fprintf(br.streams.Err, "no bead is ready; backlog %s completed\n", id)
		return nil
	case n.failed > 0:
		return exitf(ExitFailed, "backlog %s: %d of %d bead(s) failed; details: vibeteam show %s", id, n.failed, beads, id)
	case n.parked > 0:
		return exitf(ExitParked, "backlog %s: %d bead(s) wait for a person (blocked, a review, a question or a usage limit); see vibeteam show %s, then vibeteam resume %s", id, n.parked, id, id)
	case spent != "":
		return exitf(ExitParked, "backlog %s: its budget is spent (%s), so no more bead was taken; to go on: vibeteam resume %s --max-cost USD | --max-tokens N", id, spent, id)
	}
	fmt.Fprintf(br.streams.Err, "backlog %s completed: %d bead(s) (%s); details: vibeteam show %s\n", id, n.completed, time.Since(br.sess.StartTime).Round(10*time.Millisecond), id)
	return nil
}

// changed saves the backlog (under br.mu); a failed save counts until a
// later one makes the file whole again. The board redraws on its own.
func (br *backlogRun) changed() {
	br.saveErr = br.mgr.Save(br.sess)
}

func allIn(want, have []string) bool {
	for _, l := range want {
		if !slices.Contains(have, l) {
			return false
		}
	}
	return true
}

// prepare reads a bead (bd show), chooses and loads its grimoire, and
// names its session.
func (br *backlogRun) prepare(ctx context.Context, id string) (*state.BacklogBead, error) {
	// The grimoire is chosen from what bd ready said of the bead (its
	// type, labels): the scheduler's loop makes no bd call per bead; the
	// bead's run reads it whole.
	br.prepMu.Lock()
	fields := br.listed[id]
	br.prepMu.Unlock()
	if fields == nil {
		var err error
		if fields, err = br.show(ctx, id); err != nil {
			br.take(id)
			return nil, err
		}
	}
	def, name, rule, err := br.choose(fields, "")
	if err != nil {
		br.take(id)
		return nil, err
	}
	br.prepMu.Lock()
	br.defs[id] = def
	br.prepMu.Unlock()
	session, err := br.mgr.NewID()
	if err != nil {
		return nil, err
	}
	b := &state.BacklogBead{
		ID: id, Title: beads.Bead(fields).Title(), Grimoire: name, Rule: rule, Session: session,
		Adapters: grimoireAdapters(def),
	}
	return b, nil
}

// show reads bead id whole (bd show): its fields for the templates.
func (br *backlogRun) show(ctx context.Context, id string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, bdTimeout)
	defer cancel()
	b, err := br.client.Show(ctx, id)
	if err != nil {
		return nil, err
	}
	return map[string]any(b), nil
}

// choose is a bead's grimoire: the run's, the one named (a resume), or
// the one the rules choose for its fields; its name, and the rule.
func (br *backlogRun) choose(fields map[string]any, named string) (def *workflow.Definition, name, rule string, err error) {
	switch {
	case br.grimoire != nil:
		def, name, rule = br.grimoire, br.sess.Backlog.Grimoire, "given"
	case named != "":
		if def, err = loadChosenGrimoire(named, br.base, loadOptions(br.c, br.reg, br.base)); err != nil {
			return nil, "", "", errors.New(exitMessage(err))
		}
		name, rule = named, "chosen before"
	default:
		if name, rule, err = cmdutil.SelectGrimoire(br.base, fields); err != nil {
			return nil, "", "", errors.New(exitMessage(err))
		}
		if def, err = loadChosenGrimoire(name, br.base, loadOptions(br.c, br.reg, br.base)); err != nil {
			return nil, "", "", errors.New(exitMessage(err))
		}
	}
	if def.Kind != workflow.KindGrimoire {
		return nil, "", "", fmt.Errorf("%s is a stage workflow, not a grimoire", def.Source)
	}
	return def, name, rule, nil
}

// grimoireAdapters are the agent CLIs a grimoire's agent steps run.
func grimoireAdapters(def *workflow.Definition) []string {
	var list []string
	add := func(a string) {
		if a == "" {
			a = workflow.DefaultAgentAdapter
		}
		if a != workflow.ShellAdapter && !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	for s := range def.AllSteps() {
		if s.Agent != nil {
			add(s.Agent.Adapter)
		}
		for _, t := range s.Tasks {
			add(t.Adapter)
		}
	}
	slices.Sort(list)
	return list
}

// runBead runs (or continues) one bead's session to its end, as run
// --bead would, and records how it ended.
func (br *backlogRun) runBead(ctx context.Context, b *state.BacklogBead, resume bool) {
	br.take(b.ID)
	br.running.Add(1)
	defer br.running.Add(-1)
	ctrl, err := br.startBead(ctx, b, resume)
	var other *state.LockedError
	if errors.As(err, &other) && resume && other.ID == b.Session {
		// The bead's own session runs in another process (its own resume):
		// how it ends there is how the bead ends.
		if br.awaitOther(ctx, b, other) {
			br.board.BeadEnded(b)
			return
		}
		ctrl, err = br.startBead(ctx, b, resume)
	}
	if err != nil {
		br.startFailed(b, err)
		return
	}
	br.ctrlMu.Lock()
	br.ctrls[b.ID] = ctrl
	br.ctrlMu.Unlock()
	if p := br.board.Prompter; p != nil {
		p.AddController(ctrl)
	}
	out, err := ctrl.Run(ctx)
	br.ctrlMu.Lock()
	delete(br.ctrls, b.ID)
	br.ctrlMu.Unlock()
	sess := ctrl.Session()
	br.mu.Lock()
	b.Status, b.Reason = string(out.Status), ""
	if err != nil {
		b.Status, b.Reason = string(state.StatusFailed), err.Error()
	}
	b.Next = ""
	if out.Status != state.StatusCompleted {
		b.Next = nextCommand(sess, false)
	}
	switch out.Status {
	case state.StatusBlocked:
		b.Reason = string(sess.BlockedReason)
		if c := strings.TrimSpace(excerpt.FirstLine(sess.BlockedContext)); c != "" && sess.BlockedReason == engine.BlockedGateRed {
			// The gate's first failure line says what broke.
			b.Reason += ": " + c
		}
	case state.StatusFailed:
		if b.Reason == "" {
			b.Reason = strings.TrimSpace(excerpt.FirstLine(sess.Error))
		}
		if b.Reason == "" && out.FailedTask != "" {
			b.Reason = "task " + out.FailedTask + " failed"
		}
	}
	if out.Status == state.StatusLimited && sess.Limit != nil {
		b.LimitedUntil = sess.Limit.ResetAt
		b.Reason = ui.LimitLine(sess.Limit, time.Now())
	}
	t := sess.AgentTotals()
	b.Tokens, b.CostUSD = t.Tokens.Input+t.Tokens.Output, t.CostUSD
	grimoire := b.Grimoire
	br.mu.Unlock()
	br.board.BeadEnded(b)
	br.notify.session(sess, grimoire)
}

// startFailed records a bead whose session could not start or resume.
func (br *backlogRun) startFailed(b *state.BacklogBead, err error) {
	var skipped string
	br.mu.Lock()
	var owned *worktree.OwnedError
	var locked *state.LockedError
	var claim *beads.ClaimError
	switch {
	case errors.As(err, &claim):
		// Another's bead (or no longer claimable): left to them.
		b.Status, b.Reason = state.BeadSkipped, claim.Error()
		skipped = fmt.Sprintf("bead %s: skipped: %s (bd: %s)", safe(b.ID), safe(claim.Error()), safe(claim.Line))
	case errors.Is(err, core.ErrAlreadyCompleted):
		b.Status = string(state.StatusCompleted)
	case errors.As(err, &owned), errors.As(err, &locked):
		b.Status, b.Reason = state.BeadSkipped, err.Error()
	default:
		b.Status, b.Reason = string(state.StatusFailed), err.Error()
	}
	br.mu.Unlock()
	if skipped != "" {
		br.board.Line(skipped)
	}
	br.board.BeadEnded(b)
}

// startBead makes the bead's session controller: a new session under the
// id the backlog recorded, or the existing one resumed.
func (br *backlogRun) startBead(ctx context.Context, b *state.BacklogBead, resume bool) (*core.SessionController, error) {
	opts := br.opts
	opts.SecretVars = append(slices.Clip(opts.SecretVars), br.secret...)
	// A bead's usage limit is waited out by the backlog's scheduler
	// (br.waitLimits), which runs other beads meanwhile, not in its task.
	opts.WaitLimits = 0
	opts.Sandbox = br.sandbox
	opts.KeepSessions = 0 // the backlog prunes once, at its end
	// The run's limit is the backlog's, over every bead: not each bead's.
	// The bead's own meter under it gives the board its spend live.
	beadMeter := budget.NewMeter(budget.Limit{}, br.meter)
	br.meters.Store(b.ID, beadMeter)
	opts.MaxSpend, opts.Budget = budget.Limit{}, beadMeter
	opts.Interaction = engine.InteractionPark
	if p := br.board.Prompter; p != nil {
		opts.Interaction = engine.InteractionAsk
		opts.Review, opts.Permission, opts.Question = p.Review, p.Permission, p.Question
	}
	orch := core.NewOrchestrator(br.reg, br.events.of(b.ID), func(e core.Event) { br.board.Event(b, e) })
	if resume && br.mgr.Exists(b.Session) {
		sess, err := core.LoadResumable(br.mgr, b.Session, false)
		if err != nil {
			return nil, err
		}
		if err := core.RestoreVars(sess, opts); err != nil {
			return nil, err
		}
		if err := resumeBead(sess, &opts); err != nil {
			return nil, err
		}
		opts.Workspace = throughQueue(opts.Workspace, br.queue)
		return orch.Resume(sess, opts)
	}
	fields, tracker, err := br.claim(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	br.prepMu.Lock()
	def := br.defs[b.ID]
	br.prepMu.Unlock()
	if def == nil {
		// A resume of a bead whose session was never made.
		if def, _, _, err = br.choose(fields, b.Grimoire); err != nil {
			return nil, err
		}
	}
	opts.Bead, opts.BeadSource, opts.Beads = fields, "bd", tracker
	opts.Workspace = throughQueue(landingOn(openWorkspace(br.base, beads.SanitizeID(b.ID), br.sess.Backlog.Base), br.sess.Backlog.Remote), br.queue)
	opts.SessionID = b.Session
	opts.SourceDigest = fileDigest(def.Source)
	br.board.Line(fmt.Sprintf("bead %s: grimoire %s (%s), session %s", safe(b.ID), safe(b.Grimoire), safe(b.Rule), b.Session))
	return orch.Start(def, opts)
}

// exitMessage is an error's message without the exit code it carries.
func exitMessage(err error) string {
	var ee *exitError
	if errors.As(err, &ee) && ee.Msg != "" {
		return ee.Msg
	}
	return err.Error()
}

// showBacklog is `show` of a backlog session: its settings and its beads,
// each with its state, tokens, cost and session.
func showBacklog(out io.Writer, mgr *state.Manager, s *state.Session) {
	bl := s.Backlog
	status := string(s.Status)
	if mgr.Running(s.ID) {
		status += " (running)"
	}
	fmt.Fprintf(out, "session   %s\nworkflow  %s\nstatus    %s\nstarted   %s\nupdated   %s\n", safe(s.ID), safe(s.Workflow), status,
		s.StartTime.Local().Format(time.DateTime), s.UpdatedAt.Local().Format(time.DateTime))
	what := fmt.Sprintf("%d at once", bl.Jobs)
	if len(bl.Labels) > 0 {
		what += ", labels " + safe(strings.Join(bl.Labels, ","))
	}
	if bl.Limit > 0 {
		what += fmt.Sprintf(", at most %d", bl.Limit)
	}
	fmt.Fprintf(out, "beads     %s\n", what)
	if limit := (budget.Limit{Tokens: bl.MaxTokens, CostUSD: bl.MaxCostUSD}); !limit.IsZero() {
		var tokens int64
		var usd float64
		for _, b := range bl.Beads {
			tokens, usd = tokens+b.Tokens, usd+b.CostUSD
		}
		fmt.Fprintf(out, "budget    %s\n", budget.Against(tokens, usd, limit))
	}
	if s.Error != "" {
		fmt.Fprintf(out, "error     %s\n", safe(s.Error))
	}
	fmt.Fprint(out, backlogSummary(bl, true))
	if s.Status != state.StatusCompleted {
		fmt.Fprintf(out, "next      vibeteam resume %s\n", s.ID)
	}
}

// backlogSummary is the table of a backlog's beads; each bead's session
// is named where a person may want it (all: always).
func backlogSummary(bl *state.Backlog, all bool) string {
	var b strings.Builder
	var tokens int64
	var cost float64
	for _, bd := range bl.Beads {
		tokens += bd.Tokens
		cost += bd.CostUSD
		fmt.Fprintf(&b, "  %s %-12s %-14s %-9s %8s  %s\n", ui.BeadGlyph(bd.Status), ui.Fit(safe(bd.ID), 12), ui.Fit(safe(bd.Status), 14),
			ui.BeadElapsed(bd, time.Now()), ui.Spend(bd.Tokens, bd.CostUSD), ui.Fit(safe(bd.Title), 40))
		if bd.Reason != "" {
			fmt.Fprintf(&b, "      %s\n", ui.Fit(safe(strings.TrimSpace(excerpt.FirstLine(bd.Reason))), 90))
		} else if bd.LimitedUntil != nil {
			fmt.Fprintf(&b, "      usage limit, resets %s\n", bd.LimitedUntil.Local().Format("2006-01-02 15:04 MST"))
		}
		switch {
		case bd.Next != "" && bd.Status != string(state.StatusCompleted):
			fmt.Fprintf(&b, "      next: %s\n", safe(bd.Next))
		case bd.Session != "" && (all || bd.Status != string(state.StatusCompleted) && bd.Status != state.BeadSkipped):
			fmt.Fprintf(&b, "      session %s\n", bd.Session)
		}
	}
	fmt.Fprintf(&b, "  %d bead(s), %s\n", len(bl.Beads), ui.Spend(tokens, cost))
	return b.String()
}
