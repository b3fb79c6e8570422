//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/e2e/fakegemini"
	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// limitedWorld is a claude world on a subscription (an OAuth token, as
// Claude Code reads usage limits only for one) whose first main-loop
// request meets the five-hour usage limit, resetting in reset.
func limitedWorld(t *testing.T, reset time.Duration) *world {
	t.Helper()
	var once sync.Once
	base := fakeanthropic.CreateFile()
	script := func(c fakeanthropic.Call) fakeanthropic.Reply {
		limited := false
		if !fakeanthropic.IsSideRequest(c.Request) {
			once.Do(func() { limited = true })
		}
		if limited {
			return fakeanthropic.Reply{Status: 429, LimitReset: time.Now().Add(reset)}
		}
		return base(c)
	}
	w := newWorld(t, worldOptions{approveKey: true, script: script})
	env := w.env[:0]
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") {
			env = append(env, kv)
		}
	}
	w.env = append(env, "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-test")
	return w
}

// Claude Code's usage limit (its rate_limit_event and usage_limit_reached
// result) stops the session as limited, with claude's reset time.
func TestClaudeUsageLimitParks(t *testing.T) {
	w := limitedWorld(t, 2*time.Hour)
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 3 {
		t.Fatalf("%s, want 3", r)
	}
	s := w.only()
	if string(s.Status) != "limited" || s.Limit == nil || s.Limit.Adapter != "claude" || s.Limit.ResetAt == nil {
		t.Fatalf("status %s, limit %+v", s.Status, s.Limit)
	}
	if d := time.Until(*s.Limit.ResetAt); d < 118*time.Minute || d > 121*time.Minute {
		t.Errorf("reset in %s, want about 2h", d)
	}
	if !strings.Contains(s.Limit.Message, "limit") {
		t.Errorf("claude's words: %q", s.Limit.Message)
	}
}

// With --wait-limits the run waits for the reset and continues claude's
// own session (--resume), which then does the work.
func TestClaudeUsageLimitWaitedOut(t *testing.T) {
	w := limitedWorld(t, 2*time.Second)
	r := w.run("run", w.promptWorkflow("headless", "Please "+fakeanthropic.CreateTrigger+" now."), "--base-dir", w.project, "--auto-approve", "--headless", "--wait-limits=1m")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	s := w.only()
	if string(s.Status) != "completed" || s.Limit != nil {
		t.Fatalf("status %s, limit %+v", s.Status, s.Limit)
	}
	rec := s.Tasks["agent"]
	if rec == nil || !strings.Contains(strings.Join(rec.Argv, " "), "--resume") {
		t.Errorf("the run after the wait did not continue claude's session: %+v", rec)
	}
	if !strings.Contains(r.stderr, "claude usage limit: waiting until") {
		t.Errorf("the wait is not said:\n%s", r.stderr)
	}
}

// continuedScript runs base, except that a turn continuing a thread
// that holds createPrompt (a turn refused by a limit) gets call, the
// first step of the work: only the agent's own session, continued, holds
// that prompt.
func continuedScript(base fakeopenai.Script, call fakeopenai.Reply) fakeopenai.Script {
	return func(c fakeopenai.Call) fakeopenai.Reply {
		if c.HasLast && c.Last.IsUserMessage() && c.Request.CallOutputs() == 0 && !c.Request.IsSideRequest() && heldPrompt(c.Request.UserTexts()) {
			return call
		}
		return base(c)
	}
}

// heldPrompt reports whether a conversation's user turns hold createPrompt.
func heldPrompt(texts []string) bool {
	for _, s := range texts {
		if strings.Contains(s, createTrigger) {
			return true
		}
	}
	return false
}

// limitedCodexWorld is a codex world whose model meets a usage limit
// (the ChatGPT backend's usage_limit_reached, resetting at reset) while
// limited is set, and otherwise creates the file.
func limitedCodexWorld(t *testing.T, limited *atomic.Bool, reset time.Time) *world {
	t.Helper()
	next := continuedScript(fakeopenai.CreateFile(false), fakeopenai.Exec("touch "+createdFile, false))
	return newCodexWorld(t, func(c fakeopenai.Call) fakeopenai.Reply {
		if limited.Load() {
			return fakeopenai.UsageLimit(reset)
		}
		return next(c)
	})
}

// Codex's usage limit ("You’ve hit your usage limit … try again at 4:31
// PM.") with a reset beyond --wait-limits stops the session as limited at
// once, with codex's reset time (to the minute: all codex says); show
// gives it; and after the reset, resume continues codex's own thread,
// which does the work.
func TestCodexUsageLimitBeyondWaitParksThenResumes(t *testing.T) {
	var limited atomic.Bool
	limited.Store(true)
	reset := time.Now().Add(2 * time.Hour)
	w := limitedCodexWorld(t, &limited, reset)
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless", "--wait-limits=1m")
	s := w.assertLimited(r, "codex", reset.Truncate(time.Minute), time.Minute)
	rec := stoppedBeyondWait(t, r, s, "codex", "hit your usage limit")
	if _, err := os.Stat(filepath.Join(w.project, createdFile)); err == nil {
		t.Fatalf("%s exists although the model refused every turn", createdFile)
	}

	limited.Store(false)
	r = w.run("resume", s.ID, "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	s = w.only()
	w.assertDone(s)
	w.assertCreated()
	after := s.Tasks["agent"]
	if argv := strings.Join(after.Argv, " "); after.Agent == nil || after.Agent.SessionID != rec.Agent.SessionID || !strings.Contains(argv, "resume "+rec.Agent.SessionID) {
		t.Errorf("codex's thread %s was not continued: %+v\nargv %s", rec.Agent.SessionID, after.Agent, argv)
	}
	if s.Limit != nil {
		t.Errorf("the limit stays on a completed session: %+v", s.Limit)
	}
}

// limitedOpencodeWorld is an opencode world whose provider refuses every
// request for lasts from the first turn of the main loop on, with
// message(the reset), as an account out of quota does: status 402, which
// opencode does not retry (it retries a 429 for as long as it lasts,
// saying nothing); then the model creates the file.
func limitedOpencodeWorld(t *testing.T, lasts time.Duration, message func(reset time.Time) string) *world {
	t.Helper()
	var mu sync.Mutex
	var reset time.Time
	limited := func(c fakeopenai.Call) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		if reset.IsZero() && !c.Request.IsSideRequest() {
			// From the first turn on, not opencode's start (seconds).
			reset = time.Now().Add(lasts).Truncate(time.Second)
		}
		return reset, !reset.IsZero() && time.Now().Before(reset)
	}
	exec := fakeopenai.Bash("touch " + createdFile)
	base := fakeopenai.Sequence(createTrigger, fakeopenai.DoneText, fakeopenai.OtherText, exec)
	return newOpencodeWorld(t, func(c fakeopenai.Call) fakeopenai.Reply {
		if at, ok := limited(c); ok {
			return fakeopenai.QuotaError(402, message(at))
		}
		return continuedScript(base, exec)(c)
	})
}

// A provider's spend limit through opencode ("You have reached your
// specified API usage limits. You will regain access on … UTC.", opencode's
// error event) stops the session as limited, with the provider's reset
// time; show gives it.
func TestOpencodeUsageLimitParks(t *testing.T) {
	// The Anthropic API's words for a spend limit, to the minute.
	reset := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 3)
	w := limitedOpencodeWorld(t, time.Until(reset), func(time.Time) string {
		return "You have reached your specified API usage limits. You will regain access on " + reset.Format("2006-01-02 at 15:04") + " UTC."
	})
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless")
	s := w.assertLimited(r, "opencode", reset, 0)
	if !strings.Contains(s.Limit.Message, "reached your specified API usage limits") {
		t.Errorf("the provider's words: %q", s.Limit.Message)
	}
}

// With --wait-limits the run waits out a provider's limit that resets in
// seconds and continues opencode's own session (--session), which then
// does the work.
func TestOpencodeUsageLimitWaitedOut(t *testing.T) {
	// A coding plan's words (z.ai's), to the second.
	w := limitedOpencodeWorld(t, 2*time.Second, func(reset time.Time) string {
		return "Usage limit reached for 5 hour. Your limit will reset at " + reset.UTC().Format("2006-01-02 15:04:05") + " +0000"
	})
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless", "--wait-limits=1m")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	s := w.only()
	w.assertDone(s)
	w.assertCreated()
	if s.Limit != nil {
		t.Errorf("the limit stays on a completed session: %+v", s.Limit)
	}
	rec := s.Tasks["agent"]
	if argv := strings.Join(rec.Argv, " "); rec.Agent == nil || !strings.Contains(argv, "--session "+rec.Agent.SessionID) {
		t.Errorf("the run after the wait did not continue opencode's session: %+v\nargv %s", rec.Agent, argv)
	}
	if !strings.Contains(r.stderr, "opencode usage limit: waiting until") {
		t.Errorf("the wait is not said:\n%s", r.stderr)
	}
}

// Gemini's quota error with a retry delay it will not wait (above 300 s:
// "You exceeded your current quota … Please retry in 3600s.") beyond
// --wait-limits stops the session as limited at once, with the reset the
// delay gives; show gives it; and after the reset, resume continues
// gemini's own session (--resume), which finishes the work.
//
// The limit meets the task's second turn (the shell command's result):
// gemini rolls a refused turn back, and a session whose only turn was
// refused holds nothing it can --resume ("No previous sessions found for
// this project").
func TestGeminiUsageLimitBeyondWaitParksThenResumes(t *testing.T) {
	var limited atomic.Bool
	limited.Store(true)
	var resumed atomic.Bool // the continued session held the first turn
	base := fakegemini.CreateFile()
	w := newGeminiWorld(t, func(c fakegemini.Call) fakegemini.Reply {
		switch {
		case c.HasLast && c.Last.FunctionResponse != nil && limited.Load():
			return fakegemini.QuotaExceeded(time.Hour)
		case c.HasLast && c.Last.Text != "" && c.Request.FunctionResponses() > 0 && heldPrompt(c.Request.UserTexts()):
			resumed.Store(true)
			return fakegemini.Text(fakegemini.DoneText)
		}
		return base(c)
	})
	r := w.run("run", w.workflow("headless"), "--base-dir", w.project, "--auto-approve", "--headless", "--wait-limits=1m")
	// The reset is an hour after gemini got the answer, before the run ended.
	s := w.assertLimited(r, "gemini", time.Now().Add(time.Hour), r.duration+time.Second)
	rec := stoppedBeyondWait(t, r, s, "gemini", "exceeded your current quota")

	limited.Store(false)
	r = w.run("resume", s.ID, "--base-dir", w.project, "--auto-approve", "--headless")
	if r.code != 0 {
		t.Fatalf("%s, want 0", r)
	}
	s = w.only()
	w.assertDone(s)
	w.assertCreated()
	after := s.Tasks["agent"]
	if argv := strings.Join(after.Argv, " "); after.Agent == nil || after.Agent.SessionID != rec.Agent.SessionID || !strings.Contains(argv, "--resume "+rec.Agent.SessionID) || !resumed.Load() {
		t.Errorf("gemini's session %s was not continued: %+v\nargv %s", rec.Agent.SessionID, after.Agent, argv)
	}
	if after.Agent != nil && after.Agent.Result != fakegemini.DoneText {
		t.Errorf("the continued session's answer: %q", after.Agent.Result)
	}
}

// assertLimited checks a run that stopped on adapter's usage limit: exit
// 3, the session limited with the adapter's reset time (want, up to
// within earlier: a CLI may say it to the minute; zero want: no reset),
// and show saying so.
// stoppedBeyondWait checks a run whose limit resets beyond --wait-limits
// 1m: it stopped at once, said why, kept the CLI's words and the agent's
// own session to continue.
func stoppedBeyondWait(t *testing.T, r *result, s *session, cli, words string) *taskRecord {
	t.Helper()
	if r.duration > 30*time.Second {
		t.Errorf("%s: the reset is beyond --wait-limits, so the run should stop at once", r)
	}
	if !strings.Contains(r.stderr, "beyond --wait-limits 1m") {
		t.Errorf("why it did not wait is not said:\n%s", r.stderr)
	}
	if !strings.Contains(s.Limit.Message, words) {
		t.Errorf("%s's words: %q", cli, s.Limit.Message)
	}
	rec := s.Tasks["agent"]
	if rec == nil || rec.Agent == nil || rec.Agent.SessionID == "" {
		t.Fatalf("no %s session to continue: %+v", cli, rec)
	}
	return rec
}

func (w *world) assertLimited(r *result, adapter string, want time.Time, within time.Duration) *session {
	w.t.Helper()
	if r.code != 3 {
		w.t.Fatalf("%s, want 3 (limited)", r)
	}
	s := w.only()
	if s.Status != "limited" || s.TaskStatus["agent"] != "LIMITED" || s.Limit == nil || s.Limit.Adapter != adapter {
		w.t.Fatalf("status %s, task %s, limit %+v", s.Status, s.TaskStatus["agent"], s.Limit)
	}
	switch got := s.Limit.ResetAt; {
	case want.IsZero() && got != nil:
		w.t.Errorf("reset %s, but %s gave none", got, adapter)
	case !want.IsZero() && got == nil:
		w.t.Errorf("no reset time, want %s", want)
	case !want.IsZero() && (got.After(want.Add(time.Second)) || got.Before(want.Add(-within))):
		w.t.Errorf("reset %s, want %s (up to %s earlier)", got.Local(), want.Local(), within)
	}
	show := w.run("show", s.ID, "--base-dir", w.project)
	line := "limited   " + adapter + " usage limit, "
	if s.Limit.ResetAt != nil {
		line += "resets " + s.Limit.ResetAt.Local().Format("2006-01-02 15:04")
	}
	if show.code != 0 || !strings.Contains(show.stdout, line) {
		w.t.Errorf("%s: show does not say %q:\n%s", show, line, show.stdout)
	}
	return s
}
