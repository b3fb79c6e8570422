package cli

import (
	"fmt"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/internal/excerpt"
	"github.com/vibeteam/vibeteam/ui"
)

// defaultWaitLimits is how long a bare --wait-limits waits for usage
// limits in all: claude's shortest window is five hours.
const defaultWaitLimits = 5 * time.Hour

var waitLimitsFlag = &ucli.StringFlag{
	Name: "wait-limits",
	Usage: "`[=MAX]` when an agent CLI reports a usage or rate limit, wait until it resets (at most MAX in all, default " +
		defaultWaitLimits.String() + ") and continue the agent's own session, instead of stopping the session as limited (exit 3); " +
		"a reset the CLI does not name is waited with a backoff from 1m (doubling, at most 30m); one beyond MAX stops at once",
}

// expandWaitLimits gives a bare --wait-limits its default MAX: the flag
// library has no optional values, and "--wait-limits 2h" would read a
// workflow name as the MAX, so a value goes with "=".
func expandWaitLimits(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--wait-limits" || a == "-wait-limits" {
			a = "--wait-limits=" + defaultWaitLimits.String()
		}
		out[i] = a
	}
	return out
}

// waitLimitsOf reads --wait-limits: 0 when it is not given.
func waitLimitsOf(c *ucli.Context) (time.Duration, error) {
	v := c.String("wait-limits")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, exitf(ExitUsage, "--wait-limits=%s: want a duration such as 5h or 30m", v)
	}
	return d, nil
}

// limitedReport is what a run that stopped on a usage limit says.
func limitedReport(sess *state.Session) string {
	var b strings.Builder
	if l := sess.Limit; l != nil {
		fmt.Fprintf(&b, "limited: %s\n  %s says: %s\n", ui.LimitLine(l, time.Now()), safe(l.Adapter), safe(excerpt.OneLine(l.Message, 0)))
	}
	fmt.Fprintf(&b, "session %s is limited; after the reset: vibeteam resume %s (the agent's session continues), or wait for it: vibeteam resume %s --wait-limits", sess.ID, sess.ID, sess.ID)
	return b.String()
}
