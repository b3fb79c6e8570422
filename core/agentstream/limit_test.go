package agentstream

import (
	"strings"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
)

// The lines are what the CLIs printed here against a fake server that
// refused with their providers' limit responses (claude 2.1.332 with a
// subscription token, codex 0.169.0, gemini 0.61.0, opencode 1.18.33).
func TestLimitOfEachCLI(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cases := []struct {
		name   string
		format adapters.Output
		lines  []string
		reset  time.Time // zero: none
		within time.Duration
	}{
		{"claude usage limit", adapters.OutputClaudeStreamJSON, []string{
			`{"type":"system","subtype":"init","session_id":"s1"}`,
			`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795624234,"rateLimitType":"five_hour","isUsingOverage":false},"session_id":"s1"}`,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"You've hit your 5-hour limit · resets 4:30pm (UTC)"}]},"session_id":"s1","error":"rate_limit","is_api_error_message":true,"api_error_status":429,"api_error":"usage_limit_reached","api_error_params":{"rate_limit_info":{"status":"rejected","resetsAt":1795624234,"rateLimitType":"five_hour"}}}`,
			`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error_type":"rate_limit_error","api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 4:30pm (UTC)","session_id":"s1"}`,
		}, time.Unix(1795624234, 0), 0},
		{"claude rate limit with an API key", adapters.OutputClaudeStreamJSON, []string{
			`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error_type":"rate_limit_error","result":"API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.","session_id":"s1"}`,
		}, time.Time{}, 0},
		{"claude 1.0 usage limit", adapters.OutputClaudeStreamJSON, []string{
			`{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1753441200","session_id":"s1"}`,
		}, time.Unix(1753441200, 0), 0},
		{"codex usage limit", adapters.OutputCodexJSON, []string{
			`{"type":"thread.started","thread_id":"t1"}`,
			`{"type":"error","message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at Nov 26th, 2030 4:31 PM."}`,
			`{"type":"turn.failed","error":{"message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at Nov 26th, 2030 4:31 PM."}}`,
		}, time.Date(2030, 11, 26, 16, 31, 0, 0, time.Local), 0},
		{"codex rate limit", adapters.OutputCodexJSON, []string{
			`{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}`,
		}, time.Time{}, 0},
		{"gemini quota", adapters.OutputGeminiStreamJSON, []string{
			`{"type":"init","session_id":"g1","model":"auto"}`,
			`{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. Please retry in 3600s.\nSuggested retry after 3600s.]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method"},"stats":{"total_tokens":0}}`,
		}, now.Add(time.Hour), 5 * time.Second},
		{"opencode spend limit", adapters.OutputOpencodeJSON, []string{
			`{"type":"error","timestamp":1795620816554,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"You have reached your specified API usage limits. You will regain access on 2030-12-01 at 00:00 UTC.","statusCode":400,"isRetryable":false,"responseBody":"{\"error\": {\"message\": \"You have reached your specified API usage limits. You will regain access on 2030-12-01 at 00:00 UTC.\", \"type\": \"insufficient_quota\", \"code\": \"insufficient_quota\"}}"}}}`,
		}, time.Date(2030, 12, 1, 0, 0, 0, 0, time.UTC), 0},
	}
	for _, c := range cases {
		p := New(c.format)
		for _, l := range c.lines {
			p.Feed([]byte(l))
		}
		sum := p.Summary()
		if !sum.IsError || sum.Limit == nil {
			t.Errorf("%s: no limit in %+v", c.name, sum)
			continue
		}
		if sum.Limit.Message == "" || !strings.Contains(sum.Error, strings.SplitN(sum.Limit.Message, "\n", 2)[0]) {
			t.Errorf("%s: limit message %q, error %q", c.name, sum.Limit.Message, sum.Error)
		}
		switch {
		case c.reset.IsZero() && sum.Limit.ResetAt != nil:
			t.Errorf("%s: reset %v, want none", c.name, sum.Limit.ResetAt)
		case !c.reset.IsZero() && sum.Limit.ResetAt == nil:
			t.Errorf("%s: no reset, want %v", c.name, c.reset)
		case !c.reset.IsZero() && (sum.Limit.ResetAt.Sub(c.reset) > c.within || c.reset.Sub(*sum.Limit.ResetAt) > c.within):
			t.Errorf("%s: reset %v, want %v", c.name, sum.Limit.ResetAt, c.reset)
		}
	}
}

// A failure that is not a limit is not one.
func TestNoLimitInOtherErrors(t *testing.T) {
	t.Parallel()
	p := New(adapters.OutputClaudeStreamJSON)
	p.Feed([]byte(`{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"API Error: 400 invalid model","session_id":"s1"}`))
	if l := p.Summary().Limit; l != nil {
		t.Errorf("limit %+v in a 400", l)
	}
	// A rate_limit_event that allows is no limit.
	p = New(adapters.OutputClaudeStreamJSON)
	p.Feed([]byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1795624234}}`))
	p.Feed([]byte(`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1"}`))
	if l := p.Summary().Limit; l != nil {
		t.Errorf("limit %+v in a run that succeeded", l)
	}
}

func TestResetTimeForms(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	utc := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for msg, want := range map[string]time.Time{
		"You've hit your limit · resets 4:30pm (UTC)":                           utc("2026-11-25T16:30:00Z"),
		"You've hit your limit · resets 2pm (UTC)":                              utc("2026-11-26T14:00:00Z"),
		"You've hit your limit · resets Dec 3 at 4pm (UTC)":                     utc("2026-12-03T16:00:00Z"),
		"Claude usage limit reached. Your limit will reset at 5pm (Etc/GMT-1).": utc("2026-11-25T16:00:00Z"),
		"Please retry in 900ms.":                                                now.Add(900 * time.Millisecond),
		"It will reset at 2026-11-30 16:11:46 +0800 CST.":                       utc("2026-11-30T08:11:46Z"),
		"You will regain access on 2026-12-01 at 00:00 UTC.":                    utc("2026-12-01T00:00:00Z"),
	} {
		got := ResetTime(msg, now)
		if got == nil || !got.Equal(want) {
			t.Errorf("ResetTime(%q) = %v, want %v", msg, got, want)
		}
	}
	if got := ResetTime("try again later", now); got != nil {
		t.Errorf("a reset %v from no time", got)
	}
}
