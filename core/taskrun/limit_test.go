package taskrun

import (
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

// How long a limit is waited: to its reset and a margin, a reset already
// passed too (codex says the minute, so "4:31 PM" at 4:31:20 is still to
// come), a backoff without a reset, never beyond the bound.
func TestLimitWait(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 16, 31, 20, 0, time.UTC)
	at := func(d time.Duration) *agentstream.Limit { r := now.Add(d); return &agentstream.Limit{ResetAt: &r} }
	for _, c := range []struct {
		name          string
		lim           *agentstream.Limit
		bound, waited time.Duration
		tries         int
		want          time.Duration
		why           string
	}{
		{"no --wait-limits", at(time.Hour), 0, 0, 0, 0, ""},
		{"a reset in an hour", at(time.Hour), 5 * time.Hour, 0, 0, time.Hour + limitMargin, ""},
		{"a reset in 2s", at(2 * time.Second), time.Minute, 0, 0, 2*time.Second + 500*time.Millisecond, ""},
		{"a reset passed", at(-20 * time.Second), time.Minute, 0, 0, limitMargin, ""},
		{"a reset beyond the bound", at(2 * time.Hour), time.Minute, 0, 0, 0, "beyond --wait-limits 1m"},
		{"no reset, first time", &agentstream.Limit{}, time.Hour, 0, 0, time.Minute, ""},
		{"no reset, third time", &agentstream.Limit{}, time.Hour, 3 * time.Minute, 2, 4 * time.Minute, ""},
		{"no reset, bound spent", &agentstream.Limit{}, 5 * time.Minute, 3 * time.Minute, 2, 0, "after waiting 3m"},
	} {
		got, why := limitWait(c.lim, now, c.bound, c.waited, c.tries)
		if got != c.want || (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: wait %s (%q), want %s (%q)", c.name, got, why, c.want, c.why)
		}
	}
}
