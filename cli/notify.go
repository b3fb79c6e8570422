package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/state"
)

// notifyTimeout bounds a notifier's run: a slow one is a warning, and the
// run goes on.
const notifyTimeout = 10 * time.Second

// Events a notifier is told about: when a session ends, or needs a person.
const (
	notifyCompleted = "completed"
	notifyFailed    = "failed"
	notifyBlocked   = "blocked"
	notifyReview    = "review"  // a merge waits for a person's review
	notifyWaiting   = "waiting" // an agent asked a question, or was denied a tool
	notifyLimited   = "limited" // the agent CLI's usage limit: it goes on after the reset
)

func notifyFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "notify", Usage: "run `COMMAND` (sh -c, with one JSON object on stdin: event, session, bead, grimoire, status, reason, next) when the session completes, fails, blocks, waits for a review or a person, or is limited (default: notify: in .vibeteam/config.yaml)"},
		&ucli.DurationFlag{Name: "notify-timeout", Value: notifyTimeout, Hidden: true, Usage: "how long a notifier may run before it is killed"},
	}
}

// notification is what a notifier reads on its stdin.
type notification struct {
	Event    string `json:"event"`
	Session  string `json:"session"`
	Bead     string `json:"bead"`
	Grimoire string `json:"grimoire"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	// Next is the command a person types to go on (or to look).
	Next string `json:"next"`
	// Message is the session's own account of why, in words.
	Message string `json:"message,omitempty"`
}

// notifier runs the notify command. Safe for concurrent use; nil when
// there is no command, and then it does nothing.
type notifier struct {
	cmd     string
	dir     string // where the command runs: the project
	timeout time.Duration
	warn    func(string)
}

func newNotifier(cmd string, warn func(string)) *notifier {
	if strings.TrimSpace(cmd) == "" {
		return nil
	}
	return &notifier{cmd: cmd, timeout: notifyTimeout, warn: warn}
}

// notifierFor is the run's notifier: --notify, else config.yaml's
// notify:; a config.yaml that cannot be read is a usage error.
func notifierFor(c *ucli.Context, base string, warn func(string)) (*notifier, error) {
	cmd := c.String("notify")
	if !c.IsSet("notify") {
		cfg, err := beads.LoadConfig(base)
		if err != nil {
			return nil, err
		}
		cmd = cfg.Notify
	}
	n := newNotifier(cmd, warn)
	if n != nil {
		n.dir = base
		if d := c.Duration("notify-timeout"); d > 0 {
			n.timeout = d
		}
	}
	return n, nil
}

// session tells the notifier how sess ended, when that is news for a
// person: completed, failed, blocked, waiting for a review or for them,
// limited. A session interrupted or still running is not.
func (n *notifier) session(sess *state.Session, grimoire string) {
	if n == nil || sess == nil {
		return
	}
	p, ok := sessionNotification(sess, grimoire)
	if !ok {
		return
	}
	n.send(p)
}

// sessionNotification is what a notifier is told of sess; ok is false
// when its status is no news.
func sessionNotification(sess *state.Session, grimoire string) (notification, bool) {
	if grimoire == "" {
		grimoire = sess.Workflow
	}
	p := notification{
		Session: sess.ID, Bead: beadOf(sess), Grimoire: grimoire, Status: string(sess.Status),
		Reason: sess.Error, Message: sess.Error,
	}
	id := sess.ID
	switch sess.Status {
	case state.StatusCompleted:
		p.Event, p.Next = notifyCompleted, "vibeteam show "+id
		if n := len(sess.FailedSteps); n > 0 {
			p.Reason = fmt.Sprintf("%d step(s) failed on the way: %s", n, strings.Join(sess.FailedSteps, ", "))
		}
	case state.StatusFailed:
		p.Event, p.Next = notifyFailed, "vibeteam resume "+id
	case state.StatusBlocked:
		p.Event, p.Next = notifyBlocked, "vibeteam resume "+id
		if sess.BlockedReason != "" {
			p.Reason = string(sess.BlockedReason)
		}
		if sess.BlockedReason == engine.BlockedBudget {
			p.Next = budgetNext(sess)
		}
	case state.StatusPendingMerge:
		p.Event, p.Next = notifyReview, "vibeteam resume "+id+" --approve-merge"
		p.Reason = "its merge waits for a review"
	case state.StatusWaiting:
		p.Event, p.Next = notifyWaiting, waitingNext(sess)
	case state.StatusLimited:
		p.Event, p.Next = notifyLimited, "vibeteam resume "+id
	default:
		return p, false
	}
	return p, true
}

// budgetNext is how a session blocked on a budget goes on: with the run's
// budget raised, or the grimoire's (edited, then read again).
func budgetNext(sess *state.Session) string {
	switch {
	case strings.Contains(sess.Error, "(the run's budget"):
		if strings.Contains(sess.Error, "budget spent: tokens") {
			return "vibeteam resume " + sess.ID + " --max-tokens N"
		}
		return "vibeteam resume " + sess.ID + " --max-cost USD"
	case sess.WorkflowDefinition != nil && sess.WorkflowDefinition.Source != "":
		return "vibeteam resume " + sess.ID + " --reload"
	}
	return "vibeteam resume " + sess.ID
}

// waitingNext is the command that answers what a waiting session's agents
// wait for: the tools they were denied, or their question.
func waitingNext(sess *state.Session) string {
	next := "vibeteam resume " + sess.ID
	if ids := sess.WaitingFor(engine.DeniedReason); len(ids) > 0 {
		for _, id := range ids {
			if t, _ := sess.Task(id); t.Record.Agent != nil { // WaitingFor: a record
				for _, tool := range t.Record.Agent.DeniedTools() {
					next += " --allow " + shellWord(tool)
				}
			}
		}
		return next
	}
	if len(sess.WaitingFor(engine.QuestionReason)) > 0 {
		return next + " --answer TEXT"
	}
	return next
}

// beadOf is the id of the bead a session works on, "" without one.
func beadOf(sess *state.Session) string {
	if id, ok := sess.Bead["id"].(string); ok {
		return id
	}
	return ""
}

// send runs the command with p on its stdin, in a process group of its
// own that is killed at the time limit. Whatever happens is at most a
// warning.
func (n *notifier) send(p notification) {
	payload, err := json.Marshal(p)
	if err != nil {
		n.warn(fmt.Sprintf("notify: %v", err))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", n.cmd)
	cmd.Dir = n.dir
	cmd.Stdin = bytes.NewReader(append(payload, '\n'))
	var out cappedOutput
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Its output pipe may be held by a child that outlived it: not waited
	// for long.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	what := ""
	if s := strings.TrimSpace(out.String()); s != "" {
		what = ": " + oneLineOf(s)
	}
	switch {
	case ctx.Err() != nil:
		n.warn(fmt.Sprintf("notify: %q did not finish within %s; it was stopped (the %s event of session %s)%s", n.cmd, n.timeout, p.Event, p.Session, what))
	case err != nil:
		n.warn(fmt.Sprintf("notify: %q failed (%v) on the %s event of session %s%s", n.cmd, err, p.Event, p.Session, what))
	}
}

// cappedOutput keeps the first 4 KiB a notifier prints, for a warning.
type cappedOutput struct{ b []byte }

func (c *cappedOutput) Write(p []byte) (int, error) {
	if room := 4096 - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *cappedOutput) String() string { return string(c.b) }

// oneLineOf is s on one line, at most 300 bytes.
func oneLineOf(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return safe(s)
}
