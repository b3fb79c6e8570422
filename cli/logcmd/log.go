// Package logcmd is `vibeteam log`: a session's event log, as text (a
// step tree for grimoires, a line per event for stage workflows) or as it
// is, and --follow.
package logcmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/ui"
)

// logPoll is how often log --follow looks for new lines, and whether the
// session still runs, once it has read everything there is.
const logPoll = 100 * time.Millisecond

// Options are what `vibeteam log` is asked.
type Options struct {
	IO      cmdutil.IO
	Manager *state.Manager
	ID      string // the session's whole id
	Follow  bool   // --follow
	JSON    bool   // --json
}

// NewCmdLog is the `log` command. Its action gathers the Options and hands
// them to runF (nil: Run), as gh's commands do, so a test can call Run, or
// see what the flags made, without the binary.
func NewCmdLog(streams cmdutil.IO, runF func(context.Context, *Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
	return &ucli.Command{
		Name:      "log",
		Usage:     "print a session's event log: a step tree for grimoires, a line per event for stage workflows",
		ArgsUsage: "ID",
		Description: `Reads .vibeteam/logs/<id>.jsonl. A grimoire's steps show as a tree
(loop iterations under their loop, the last lines of a failed step's output
under it); stage workflows show a line per stage and task event. Events this
version does not know print as "name key=value ...".

With --follow, lines are printed as they are written until the session
finishes (or its vibeteam is gone); an interrupt stops following.

Exit codes: 0 printed; 1 the session has no event log (yet), or it could
not be read; 2 usage error or no such session; 130/143/129 interrupted.`,
		Flags: []ucli.Flag{
			cmdutil.BaseDirFlag,
			&ucli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new events until the session finishes"},
			&ucli.BoolFlag{Name: "json", Usage: "print the JSONL lines as they are, one event a line"},
		},
		Action: func(c *ucli.Context) error {
			mgr, id, err := cmdutil.SessionArg(c)
			if err != nil {
				return err
			}
			ctx := c.Context
			if ctx == nil {
				ctx = context.Background()
			}
			return runF(ctx, &Options{IO: streams, Manager: mgr, ID: id, Follow: c.Bool("follow"), JSON: c.Bool("json")})
		},
	}
}

// Run prints the session's event log as opts say; with Follow, until the
// session finishes, ctx ends or an interrupt comes.
func Run(ctx context.Context, opts *Options) error {
	l := &logRun{mgr: opts.Manager, id: opts.ID, path: opts.Manager.EventLogPath(opts.ID), follow: opts.Follow, streams: opts.IO}
	// Written in blocks, flushed whenever the end of what the log holds so
	// far is reached.
	w := bufio.NewWriter(opts.IO.Out)
	if opts.JSON {
		l.out = &rawPrinter{w: w}
	} else {
		l.out = ui.NewLogPrinter(w)
	}
	if l.follow {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
		l.sigs = sigs
	}
	return l.run(ctx)
}

// logOutput turns the complete lines of an event log into output.
type logOutput interface {
	Line(raw []byte, n int)
	// Idle is called when every line written so far has been handled:
	// what is held back is written out.
	Idle()
	// Finished reports whether the last line was the session's end.
	Finished() bool
	// Failed is the first write error.
	Failed() error
}

type logRun struct {
	mgr     *state.Manager
	id      string
	path    string
	follow  bool
	streams cmdutil.IO
	out     logOutput
	sigs    chan os.Signal
}

// interrupted returns the exit error for a stop asked while following, or
// nil when none was.
func (l *logRun) interrupted(ctx context.Context) error {
	select {
	case s := <-l.sigs:
		return &cmdutil.ExitError{Exit: cmdutil.InterruptCode(s)}
	case <-ctx.Done():
		return &cmdutil.ExitError{Exit: cmdutil.ExitInterrupted}
	default:
		return nil
	}
}

// wait blocks for one poll interval, or until a stop is asked.
func (l *logRun) wait(ctx context.Context, tick <-chan time.Time) error {
	select {
	case s := <-l.sigs:
		return &cmdutil.ExitError{Exit: cmdutil.InterruptCode(s)}
	case <-ctx.Done():
		return &cmdutil.ExitError{Exit: cmdutil.ExitInterrupted}
	case <-tick:
		return nil
	}
}

func (l *logRun) run(ctx context.Context) error {
	var tick <-chan time.Time
	if l.follow {
		t := time.NewTicker(logPoll)
		defer t.Stop()
		tick = t.C
	}
	f, err := os.Open(l.path)
	// A session that runs opens its log right after taking its lock:
	// --follow waits for it.
	for l.follow && errors.Is(err, fs.ErrNotExist) && l.mgr.Running(l.id) {
		if werr := l.wait(ctx, tick); werr != nil {
			return werr
		}
		f, err = os.Open(l.path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		if s, lerr := l.mgr.Load(l.id); lerr == nil && s.Backlog != nil {
			return cmdutil.Exitf(cmdutil.ExitFailed, "session %s is a backlog run: each bead's events are in its own session's log (vibeteam show %s names them; then vibeteam log SESSION)", l.id, l.id)
		}
		return cmdutil.Exitf(cmdutil.ExitFailed, "session %s has no event log yet (%s)", l.id, l.path)
	}
	if err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
	}
	defer f.Close()
	src := &lineSource{r: bufio.NewReader(f)}
	running, gone := false, false
	for {
		line, ok, err := src.next()
		if err != nil {
			return cmdutil.Exitf(cmdutil.ExitFailed, "read %s: %v", l.path, err)
		}
		if ok {
			l.out.Line(line, src.n)
			if err := l.out.Failed(); err != nil {
				return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
			}
			if l.follow {
				if err := l.interrupted(ctx); err != nil {
					return err
				}
			}
			continue
		}
		// Everything written so far is shown.
		l.out.Idle()
		if err := l.out.Failed(); err != nil {
			return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
		}
		if !l.follow {
			running = l.mgr.Running(l.id)
			break
		}
		if l.out.Finished() {
			break
		}
		if gone {
			break
		}
		if !l.mgr.Running(l.id) {
			// Its vibeteam is gone, and wrote all it will before it let go
			// of the lock: one more pass reads the lines that came between
			// the end of the file and the check.
			gone = true
			continue
		}
		if err := l.wait(ctx, tick); err != nil {
			return err
		}
	}
	if len(src.partial) > 0 && !running {
		// Cut short by a crash (in a running session, it is being written).
		fmt.Fprintf(l.streams.Err, "vibeteam: the log's last line is incomplete (%d bytes); not shown\n", len(src.partial))
	}
	if running {
		fmt.Fprintf(l.streams.Err, "vibeteam: session %s is still running; vibeteam log -f %s follows it\n", l.id, l.id)
	}
	return nil
}

// lineSource reads the complete lines of a file that may still grow: a last
// line without its newline is kept until the rest of it is written.
type lineSource struct {
	r       *bufio.Reader
	partial []byte
	n       int // complete lines read
}

// next returns the next complete line without its line ending, or false at
// the current end of the file.
func (s *lineSource) next() ([]byte, bool, error) {
	b, err := s.r.ReadBytes('\n')
	s.partial = append(s.partial, b...)
	if err == nil {
		line := bytes.TrimSuffix(s.partial[:len(s.partial)-1], []byte("\r"))
		s.partial = nil
		s.n++
		return line, true, nil
	}
	if errors.Is(err, io.EOF) {
		return nil, false, nil
	}
	return nil, false, err
}

// rawPrinter is --json: the lines as they are.
type rawPrinter struct {
	w    *bufio.Writer
	err  error
	last string
}

func (p *rawPrinter) Line(raw []byte, _ int) {
	if p.err != nil {
		return
	}
	if _, p.err = p.w.Write(raw); p.err == nil {
		p.err = p.w.WriteByte('\n')
	}
	var head struct {
		Event string `json:"event"`
	}
	p.last = ""
	if json.Unmarshal(raw, &head) == nil {
		p.last = head.Event
	}
}

func (p *rawPrinter) Idle() {
	if p.err == nil {
		p.err = p.w.Flush()
	}
}

func (p *rawPrinter) Finished() bool { return p.last == events.SessionFinished }
func (p *rawPrinter) Failed() error  { return p.err }
