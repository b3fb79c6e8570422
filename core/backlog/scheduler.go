// Package backlog schedules a whole backlog of beads in one foreground
// run: every ready bead, up to Jobs at once, each in a session of its own,
// picking up the beads that become ready as their blockers close, and
// holding the beads of an agent CLI that hit its usage limit until it
// resets.
//
// The scheduler knows beads only by their records (state.BacklogBead): how
// to list the ready ones, prepare one (its grimoire, its session id) and
// run one to its end are the caller's (Config), so the loop is tested
// alone, and the CLI owns bd, git and the terminal.
package backlog

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// statusLimited is the status of a session stopped by a usage limit.
const statusLimited = "limited"

// Config is what a scheduler needs from its caller.
type Config struct {
	// Jobs is how many beads run at once (at least 1).
	Jobs int
	// Limit is how many beads are taken in all; 0 takes every ready one.
	Limit int
	// WaitLimits is how long a bead stopped by a usage limit may wait for
	// its reset to be continued in this run; 0 never waits.
	WaitLimits time.Duration

	// Ready lists the ids of the ready beads, in the order to take them.
	Ready func(ctx context.Context) ([]string, error)
	// Prepare makes the record of a bead about to be taken: its grimoire,
	// the adapters it runs and its session id. A nil record without an
	// error passes the bead over for now (asked again at the next look);
	// an error is the bead's failure.
	Prepare func(ctx context.Context, id string) (*state.BacklogBead, error)
	// Run runs a bead's session to its end (resume: continues it) and sets
	// the record's Status (a session status, or state.BeadSkipped when
	// the bead could not be taken, e.g. another run has it), Reason and
	// LimitedUntil. It is called with the record unlocked: it changes the
	// record under Lock.
	Run func(ctx context.Context, b *state.BacklogBead, resume bool)
	// Exhausted, if set, reports that the run's budget is spent: no bead
	// is taken any more.
	Exhausted func() bool
	// Changed is called, under Lock, after each change of the backlog.
	Changed func()
	// Lock guards the backlog's records, shared with Run and the display.
	Lock sync.Locker
}

// Scheduler runs one backlog.
type Scheduler struct {
	cfg Config
	bl  *state.Backlog

	running int
	taken   int // beads counted against Limit
	// held are the adapters whose usage limit has not reset yet.
	held map[string]time.Time
	// failedPrepare are the beads Prepare failed this run (not asked again).
	seen map[string]bool
	// prepared are beads prepared but held back (their CLI is limited).
	prepared map[string]*state.BacklogBead
	done     chan *state.BacklogBead
	wg       sync.WaitGroup
}

// New makes the scheduler of bl. Its records from an earlier run (a
// resume) are taken as they are: those left running or starting are
// continued first, the others are not run again.
func New(bl *state.Backlog, cfg Config) *Scheduler {
	if cfg.Jobs < 1 {
		cfg.Jobs = 1
	}
	s := &Scheduler{cfg: cfg, bl: bl, held: map[string]time.Time{}, seen: map[string]bool{}, prepared: map[string]*state.BacklogBead{}, done: make(chan *state.BacklogBead)}
	for _, b := range bl.Beads {
		s.seen[b.ID] = true
		if b.Status != state.BeadSkipped {
			s.taken++
		}
	}
	return s
}

// Unfinished are the statuses a resume continues: the bead's session was
// running (or about to start) when the run stopped.
func Unfinished(status string) bool {
	return status == state.BeadStarting || status == string(state.StatusRunning) || status == string(state.StatusCancelled)
}

// Run schedules until nothing is ready or running, the limit is reached,
// or ctx ends (then the running beads stop and Run waits for them). The
// error is the ready list's, when it fails with nothing running.
func (s *Scheduler) Run(ctx context.Context, resume []*state.BacklogBead) error {
	defer s.wg.Wait()
	queue := slices.Clone(resume)
	var readyErr error
	for {
		if ctx.Err() != nil {
			s.drain()
			return nil
		}
		for s.running < s.cfg.Jobs && len(queue) > 0 {
			s.start(ctx, queue[0], true)
			queue = queue[1:]
		}
		s.resumeDue(ctx)
		if s.running < s.cfg.Jobs && !s.full() {
			readyErr = s.takeReady(ctx)
		}
		if s.running == 0 {
			if readyErr != nil {
				return readyErr
			}
			// Nothing runs: wait for the next limit to reset, if a bead
			// waits for one; else the backlog is done.
			next, ok := s.nextReset()
			if !ok {
				return nil
			}
			if !sleepUntil(ctx, next) {
				return nil
			}
			continue
		}
		var timer *time.Timer
		var due <-chan time.Time
		if next, ok := s.nextReset(); ok {
			timer = time.NewTimer(time.Until(next))
			due = timer.C
		}
		select {
		case b := <-s.done:
			s.finished(b)
			// The others that ended meanwhile too, so that one look at the
			// ready list serves them all.
			for more := true; more; {
				select {
				case b := <-s.done:
					s.finished(b)
				default:
					more = false
				}
			}
		case <-due:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// drain waits for the running beads, which stop with ctx.
func (s *Scheduler) drain() {
	for s.running > 0 {
		s.finished(<-s.done)
	}
}

func (s *Scheduler) full() bool {
	return s.cfg.Limit > 0 && s.taken >= s.cfg.Limit || s.cfg.Exhausted != nil && s.cfg.Exhausted()
}

// takeReady starts ready beads in the free slots.
func (s *Scheduler) takeReady(ctx context.Context) error {
	ids, err := s.cfg.Ready(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if s.running >= s.cfg.Jobs || s.full() || ctx.Err() != nil {
			return nil
		}
		if s.seen[id] {
			continue
		}
		b, err := s.prepared[id], error(nil)
		if b == nil {
			b, err = s.cfg.Prepare(ctx, id)
		}
		if err != nil {
			s.seen[id] = true
			now := time.Now()
			s.cfg.Lock.Lock()
			s.bl.Beads = append(s.bl.Beads, &state.BacklogBead{ID: id, Status: string(state.StatusFailed), Reason: err.Error(), StartedAt: &now, EndedAt: &now})
			s.taken++
			s.cfg.Changed()
			s.cfg.Lock.Unlock()
			continue
		}
		if b == nil {
			continue
		}
		if s.isHeld(b.Adapters) {
			s.prepared[id] = b
			continue
		}
		delete(s.prepared, id)
		s.seen[id] = true
		s.taken++
		s.cfg.Lock.Lock()
		s.bl.Beads = append(s.bl.Beads, b)
		s.cfg.Lock.Unlock()
		s.start(ctx, b, false)
	}
	return nil
}

// start runs b in a goroutine of its own.
func (s *Scheduler) start(ctx context.Context, b *state.BacklogBead, resume bool) {
	s.running++
	now := time.Now()
	s.cfg.Lock.Lock()
	switch {
	case resume && b.Status != state.BeadStarting:
		b.Status = string(state.StatusRunning)
	case !resume:
		b.Status = state.BeadStarting
	}
	if b.StartedAt == nil {
		b.StartedAt = &now
	}
	b.EndedAt, b.LimitedUntil = nil, nil
	s.cfg.Changed()
	s.cfg.Lock.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.cfg.Run(ctx, b, resume)
		s.done <- b
	}()
}

// finished takes a bead's end into account.
func (s *Scheduler) finished(b *state.BacklogBead) {
	s.running--
	now := time.Now()
	s.cfg.Lock.Lock()
	defer s.cfg.Lock.Unlock()
	b.EndedAt = &now
	switch b.Status {
	case state.BeadSkipped:
		// Not taken after all (another run has it): it does not count.
		s.taken--
	case statusLimited:
		until := now
		if b.LimitedUntil != nil {
			until = *b.LimitedUntil
		}
		for _, a := range b.Adapters {
			if until.After(s.held[a]) {
				s.held[a] = until
			}
		}
	}
	s.cfg.Changed()
}

// isHeld reports whether one of adapters waits for its usage limit.
func (s *Scheduler) isHeld(adapters []string) bool {
	now := time.Now()
	for _, a := range adapters {
		if until, ok := s.held[a]; ok && now.Before(until) {
			return true
		}
	}
	return false
}

// waiting are the limited beads this run continues when their limit
// resets: those whose reset is known and within WaitLimits of the end of
// their run.
func (s *Scheduler) waiting() []*state.BacklogBead {
	if s.cfg.WaitLimits <= 0 {
		return nil
	}
	var list []*state.BacklogBead
	s.cfg.Lock.Lock()
	defer s.cfg.Lock.Unlock()
	for _, b := range s.bl.Beads {
		if b.Status == statusLimited && b.LimitedUntil != nil && b.EndedAt != nil &&
			b.LimitedUntil.Sub(*b.EndedAt) <= s.cfg.WaitLimits {
			list = append(list, b)
		}
	}
	return list
}

// nextReset is the earliest reset a limited bead of this run waits for.
func (s *Scheduler) nextReset() (time.Time, bool) {
	var next time.Time
	for _, b := range s.waiting() {
		if next.IsZero() || b.LimitedUntil.Before(next) {
			next = *b.LimitedUntil
		}
	}
	return next, !next.IsZero()
}

// resumeDue continues the limited beads whose reset has come.
func (s *Scheduler) resumeDue(ctx context.Context) {
	now := time.Now()
	for _, b := range s.waiting() {
		if s.running >= s.cfg.Jobs {
			return
		}
		if !now.Before(*b.LimitedUntil) {
			s.start(ctx, b, true)
		}
	}
}

// sleepUntil waits for t or ctx; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
