package agentstream

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Limit is a usage or rate limit the CLI reported: the run stopped on it,
// and running again before ResetAt fails the same way.
type Limit struct {
	Message string     `json:"message"`            // the CLI's words
	ResetAt *time.Time `json:"reset_at,omitempty"` // nil when the CLI did not say
	Kind    string     `json:"kind,omitempty"`     // what the CLI calls the limit (five_hour, ...), when it says
	// RolledBack: the CLI drops a refused turn from its session, and the
	// run was refused before the agent said anything (gemini on its
	// first call): a session this run began has nothing to continue.
	RolledBack bool `json:"rolled_back,omitempty"`
}

// limitMarks are what the four CLIs' limit messages say, lower-cased:
// claude ("You've hit your 5-hour limit · resets 4:30pm (UTC)", "Claude AI
// usage limit reached|1753441200", "API Error: Request rejected (429) ·
// This request would exceed your account's rate limit"), codex ("You’ve
// hit your usage limit. … try again at 4:31 PM.", "exceeded retry limit,
// last status: 429 Too Many Requests"), gemini ("You exceeded your current
// quota … Please retry in 3600s."), and the providers' through opencode
// ("You have reached your specified API usage limits. You will regain
// access on 2026-12-01 at 00:00 UTC.", insufficient_quota).
var limitMarks = []string{
	"usage limit", "hit your limit", "hit your usage limit", "hit your 5-hour limit", "hit your weekly limit",
	// Not "quota" alone: a bad request may name a quota ("400 quota")
	// without being a limit that resets.
	"rate limit", "rate_limit", "exceeded your current quota", "usage quota", "insufficient_quota", "quota exceeded", "quota_exceeded",
	"resource_exhausted", "resource exhausted",
	"too many requests", "status: 429", "(429)", "429 too many",
}

// LimitText reports whether an error message a CLI gave is a usage or rate
// limit, and if so the limit, with the reset time the message names.
func LimitText(msg string, now time.Time) (*Limit, bool) {
	low := strings.ToLower(msg)
	for _, m := range limitMarks {
		if strings.Contains(low, m) {
			return &Limit{Message: strings.TrimSpace(msg), ResetAt: ResetTime(msg, now)}, true
		}
	}
	return nil, false
}

var (
	// "Claude AI usage limit reached|1753441200" (Claude Code 1.0.x).
	resetEpoch = regexp.MustCompile(`limit reached\|(\d{9,11})\b`)
	// "Please retry in 3600s." / "Suggested retry after 60s." / "retry in
	// 900ms" (Gemini's RetryInfo, in its message).
	resetIn = regexp.MustCompile(`(?i)retry (?:in|after) ([0-9]+(?:\.[0-9]+)?)(ms|s)\b`)
	// "You will regain access on 2026-04-01 at 00:00 UTC." (the
	// Anthropic API's spend limit), "It will reset at 2026-07-30 16:11:46
	// +0800" (providers' quota messages).
	resetOnDate = regexp.MustCompile(`(\d{4}-\d{2}-\d{2})(?: at |T| )(\d{2}:\d{2}(?::\d{2})?)(?: ?(UTC|Z|[+-]\d{2}:?\d{2}))?`)
	// codex: "try again at 4:31 PM." today, "try again at Nov 26th, 2026
	// 4:31 PM." another day; the codex process's local time.
	resetCodex = regexp.MustCompile(`try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d{2}) ([AP]M)`)
	// claude: "resets 4:30pm (UTC)", "resets Apr 23 at 4pm
	// (America/Recife)", "reset at 5pm (Europe/Warsaw)".
	resetClaude = regexp.MustCompile(`(?i)resets?(?: at)? (?:([A-Z][a-z]{2}) (\d{1,2}) at )?(\d{1,2})(?::(\d{2}))? ?(am|pm) \(([^)]+)\)`)
)

// ResetTime reads when a limit resets from a CLI's message; nil when it
// names no time it can be sure of.
func ResetTime(msg string, now time.Time) *time.Time {
	if m := resetEpoch.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			t := time.Unix(n, 0).UTC()
			return &t
		}
	}
	if m := resetIn.FindStringSubmatch(msg); m != nil {
		v, err := strconv.ParseFloat(m[1], 64)
		if err == nil {
			unit := time.Second
			if m[2] == "ms" {
				unit = time.Millisecond
			}
			t := now.Add(time.Duration(v * float64(unit))).Round(time.Millisecond)
			return &t
		}
	}
	if m := resetCodex.FindStringSubmatch(msg); m != nil {
		return codexReset(m, now)
	}
	if m := resetClaude.FindStringSubmatch(msg); m != nil {
		return claudeReset(m, now)
	}
	if m := resetOnDate.FindStringSubmatch(msg); m != nil {
		layout, value := "2006-01-02 15:04", m[1]+" "+m[2]
		if len(m[2]) > 5 {
			layout += ":05"
		}
		loc := time.Local
		switch zone := strings.ReplaceAll(m[3], ":", ""); {
		case zone == "UTC" || zone == "Z":
			loc = time.UTC
		case zone != "":
			layout += " -0700"
			value += " " + zone
		}
		if t, err := time.ParseInLocation(layout, value, loc); err == nil {
			return &t
		}
	}
	return nil
}

func codexReset(m []string, now time.Time) *time.Time {
	hour, _ := strconv.Atoi(m[4])
	minute, _ := strconv.Atoi(m[5])
	if hour < 1 || hour > 12 || minute > 59 {
		return nil
	}
	hour %= 12
	if m[6] == "PM" {
		hour += 12
	}
	local := now.Local()
	if m[1] == "" {
		t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, time.Local)
		if t.Before(local.Add(-time.Minute)) {
			t = t.AddDate(0, 0, 1) // past midnight since codex wrote it
		}
		return &t
	}
	month, err := time.Parse("Jan", m[1])
	day, _ := strconv.Atoi(m[2])
	year, _ := strconv.Atoi(m[3])
	if err != nil {
		return nil
	}
	t := time.Date(year, month.Month(), day, hour, minute, 0, 0, time.Local)
	return &t
}

func claudeReset(m []string, now time.Time) *time.Time {
	loc, err := time.LoadLocation(m[6])
	if err != nil {
		return nil
	}
	hour, _ := strconv.Atoi(m[3])
	minute := 0
	if m[4] != "" {
		minute, _ = strconv.Atoi(m[4])
	}
	if hour < 1 || hour > 12 || minute > 59 {
		return nil
	}
	hour %= 12
	if strings.EqualFold(m[5], "pm") {
		hour += 12
	}
	there := now.In(loc)
	if m[1] != "" {
		month, err := time.Parse("Jan", m[1])
		if err != nil {
			return nil
		}
		day, _ := strconv.Atoi(m[2])
		t := time.Date(there.Year(), month.Month(), day, hour, minute, 0, 0, loc)
		if t.Before(there.AddDate(0, -1, 0)) {
			t = t.AddDate(1, 0, 0) // "Jan 2" said in late December
		}
		return &t
	}
	t := time.Date(there.Year(), there.Month(), there.Day(), hour, minute, 0, 0, loc)
	if t.Before(there.Add(-time.Minute)) {
		t = t.AddDate(0, 0, 1)
	}
	return &t
}
