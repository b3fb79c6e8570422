//go:build e2e

package e2e

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
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
