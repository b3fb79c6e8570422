package cli

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/state"
)

// limitCase is one built-in CLI's structured output when its usage limit
// stops a run (as the CLI printed it against a fake server: see
// core/agentstream/limit_test.go), with a reset `in` from now.
type limitCase struct {
	adapter, format, session string
	limited                  func(in time.Duration) string
	// secondsReset: the CLI says the reset to the second, so a run can
	// wait for a reset a second away.
	secondsReset bool
}

var limitCases = []limitCase{
	{"claude", "claude-stream-json", "sess-l", func(in time.Duration) string {
		at := time.Now().Add(in).Unix()
		return fmt.Sprintf(`{"type":"system","subtype":"init","session_id":"sess-l","model":"claude-fake"}
{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%d,"rateLimitType":"five_hour","isUsingOverage":false},"session_id":"sess-l"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 4:30pm (UTC)"}]},"session_id":"sess-l","error":"rate_limit","api_error_status":429,"api_error":"usage_limit_reached"}
{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error_type":"rate_limit_error","api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 4:30pm (UTC)","session_id":"sess-l"}
`, at)
	}, true},
	{"codex", "codex-json", "thread-l", func(in time.Duration) string {
		at := time.Now().Add(in).Local()
		msg := fmt.Sprintf("You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at %s %s.", at.Format("Jan 2")+"th,", at.Format("2006 3:04 PM"))
		return fmt.Sprintf(`{"type":"thread.started","thread_id":"thread-l"}
{"type":"turn.started"}
{"type":"error","message":%q}
{"type":"turn.failed","error":{"message":%q}}
`, msg, msg)
	}, false},
	{"gemini", "gemini-stream-json", "gem-l", func(in time.Duration) string {
		return fmt.Sprintf(`{"type":"init","session_id":"gem-l","model":"auto"}
{"type":"message","role":"user","content":"hi"}
{"type":"message","role":"assistant","content":"Looking at it.","delta":true}
{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: You exceeded your current quota, please check your plan and billing details. Please retry in %.1fs.\nSuggested retry after %ds.]\nPlease wait and try again later."},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0}}
`, in.Seconds(), int(in.Seconds()))
	}, true},
	{"opencode", "opencode-json", "ses_l", func(in time.Duration) string {
		msg := "You have exceeded the 5-hour usage quota. It will reset at " + time.Now().Add(in).Format("2006-01-02 15:04:05 -0700") + "."
		return fmt.Sprintf(`{"type":"error","timestamp":1795620816554,"sessionID":"ses_l","error":{"name":"APIError","data":{"message":%q,"statusCode":429,"isRetryable":false}}}
`, msg)
	}, true},
}

const limitDone = `{"type":"system","subtype":"init","session_id":"sess-l"}
{"type":"result","subtype":"success","is_error":false,"result":"Done after the limit.","session_id":"sess-l"}
`

// limitProject has an adapter named as the built-in one, a fake agent
// printing limited.jsonl (and exiting 1) on its first run and, continuing
// its session, continued.jsonl.
func limitProject(t *testing.T, c limitCase, in time.Duration) *project {
	t.Helper()
	p := newProject(t)
	p.write(".vibeteam/adapters/"+c.adapter+".yaml", fmt.Sprintf(`name: %s
command: %s
modes:
  headless:
    args: [record=argv.json]
    output: %s
    resume: [--resume, "{session}", cat=continued.jsonl]
    prompt: { position: arg, separator: "--" }
`, c.adapter, fakeAgent, c.format))
	p.write("limited.jsonl", c.limited(in))
	// What the continued session prints, in the CLI's own format.
	p.write("continued.jsonl", doneIn(c.format))
	p.write("wf.yaml", `id: limits
stages:
  - id: s
    tasks:
      - { id: t, adapter: `+c.adapter+`, executionMode: headless, prompt: "cat=limited.jsonl exit=1" }
`)
	return p
}

func doneIn(format string) string {
	switch format {
	case "codex-json":
		return `{"type":"thread.started","thread_id":"thread-l"}
{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"Done after the limit."}}
{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}
`
	case "gemini-stream-json":
		return `{"type":"init","session_id":"gem-l","model":"auto"}
{"type":"message","role":"assistant","content":"Done after the limit.","delta":true}
{"type":"result","status":"success","stats":{"total_tokens":12,"input_tokens":10,"output_tokens":2}}
`
	case "opencode-json":
		return `{"type":"step_start","sessionID":"ses_l","part":{"type":"step-start"}}
{"type":"text","sessionID":"ses_l","part":{"type":"text","text":"Done after the limit."}}
`
	}
	return limitDone
}

func continuedArgv(t *testing.T, p *project) string {
	t.Helper()
	var got struct{ Argv []string }
	readJSON(t, p.path("argv.json"), &got)
	return strings.Join(got.Argv[1:], " ")
}

// Without --wait-limits, a usage limit stops the session as limited (exit
// 3) with the reset time, in the session and in show; resume continues the
// agent's own session.
func TestUsageLimitParksThenResumeContinues(t *testing.T) {
	t.Parallel()
	for _, c := range limitCases {
		t.Run(c.adapter, func(t *testing.T) {
			t.Parallel()
			p := limitProject(t, c, 2*time.Hour)
			r := p.exec("run", "wf.yaml")
			wantCode(t, r, 3)
			s := p.only()
			if s.Status != state.StatusLimited || s.TaskStatus["t"] != state.TaskLimited || s.Limit == nil {
				t.Fatalf("status %s, task %s, limit %+v\n%s", s.Status, s.TaskStatus["t"], s.Limit, r.stderr)
			}
			l := s.Limit
			if l.Adapter != c.adapter || l.TaskID != "t" || l.Message == "" || l.ResetAt == nil {
				t.Fatalf("limit %+v", l)
			}
			// Minutes for codex, which says the time to the minute.
			if d := time.Until(*l.ResetAt); d < 118*time.Minute || d > 122*time.Minute {
				t.Errorf("reset in %s, want about 2h", d)
			}
			if !strings.Contains(r.stderr, c.adapter+" usage limit") || !strings.Contains(r.stderr, "vibeteam resume "+s.ID) {
				t.Errorf("stderr does not say the limit and the way on:\n%s", r.stderr)
			}
			show := p.exec("show", s.ID).stdout
			if !strings.Contains(show, "limited   "+c.adapter+" usage limit, resets "+l.ResetAt.Local().Format("2006-01-02 15:04")) {
				t.Errorf("show lacks the limit:\n%s", show)
			}
			r = p.exec("resume", s.ID)
			wantCode(t, r, 0)
			s = p.only()
			if s.Status != state.StatusCompleted || s.Limit != nil || s.TaskStatus["t"] != state.TaskDone {
				t.Fatalf("after resume: %s, limit %+v, task %s\n%s", s.Status, s.Limit, s.TaskStatus["t"], r.stderr)
			}
			if argv := continuedArgv(t, p); !strings.HasPrefix(argv, "record=argv.json --resume "+c.session+" cat=continued.jsonl -- ") {
				t.Errorf("resume did not continue the agent's session: %s", argv)
			}
		})
	}
}

// With --wait-limits, a reset the CLI names within MAX is waited for in
// the run, which then continues the agent's own session; one beyond MAX
// stops the session at once.
func TestUsageLimitWaitedOut(t *testing.T) {
	t.Parallel()
	for _, c := range limitCases {
		t.Run(c.adapter, func(t *testing.T) {
			t.Parallel()
			if !c.secondsReset {
				// codex names the minute: a reset beyond MAX stops at once.
				p := limitProject(t, c, 3*time.Hour)
				start := time.Now()
				r := p.exec("run", "wf.yaml", "--wait-limits=1h")
				wantCode(t, r, 3)
				if took := time.Since(start); took > 20*time.Second {
					t.Errorf("took %s to stop on a reset beyond --wait-limits", took)
				}
				if s := p.only(); s.Status != state.StatusLimited || !strings.Contains(r.stderr, "beyond --wait-limits 1h") {
					t.Errorf("status %s\n%s", s.Status, r.stderr)
				}
				return
			}
			p := limitProject(t, c, time.Second)
			r := p.exec("run", "wf.yaml", "--wait-limits")
			wantCode(t, r, 0)
			s := p.only()
			if s.Status != state.StatusCompleted || s.Limit != nil {
				t.Fatalf("status %s, limit %+v\n%s", s.Status, s.Limit, r.stderr)
			}
			if !strings.Contains(r.stderr, c.adapter+" usage limit: waiting until ") || !strings.Contains(r.stderr, "(resets in ") {
				t.Errorf("the wait is not said:\n%s", r.stderr)
			}
			if argv := continuedArgv(t, p); !strings.HasPrefix(argv, "record=argv.json --resume "+c.session+" cat=continued.jsonl -- ") {
				t.Errorf("the wait did not continue the agent's session: %s", argv)
			}
		})
	}
}

// A continuation that meets the limit again stops again; an invalid MAX is
// a usage error.
func TestUsageLimitAgainParksAgain(t *testing.T) {
	t.Parallel()
	p := limitProject(t, limitCases[0], time.Hour)
	wantCode(t, p.exec("run", "wf.yaml", "--wait-limits=soon"), 2)
	wantCode(t, p.exec("run", "wf.yaml"), 3)
	s := p.only()
	p.write("continued.jsonl", limitCases[0].limited(time.Hour))
	r := p.exec("resume", s.ID)
	wantCode(t, r, 3)
	if s = p.only(); s.Status != state.StatusLimited || s.Tasks["t"].Attempts != 2 {
		t.Fatalf("status %s, attempts %d\n%s", s.Status, s.Tasks["t"].Attempts, r.stderr)
	}
}

// Ctrl-C while waiting out a limit: exit 130, the session saved limited.
func TestInterruptWhileWaitingForALimit(t *testing.T) {
	t.Parallel()
	p := limitProject(t, limitCases[0], time.Hour)
	cmd := p.command("run", "wf.yaml", "--wait-limits=2h")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		list := p.sessions()
		return len(list) == 1 && list[0].TaskStatus["t"] == state.TaskLimited
	})
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, errb.String())
	}
	if s := p.only(); s.Status != state.StatusLimited || s.Limit == nil || s.Limit.Waiting {
		t.Fatalf("status %s, limit %+v", s.Status, s.Limit)
	}
}

// In a grimoire, the agent step's run is limited, and resume runs it again
// continuing the agent's session.
func TestUsageLimitInAGrimoireStep(t *testing.T) {
	t.Parallel()
	p := limitProject(t, limitCases[0], time.Hour)
	p.write(".vibeteam/spells/lim.md", "cat=limited.jsonl exit=1\n")
	p.write("g.yaml", `name: lim
steps:
  - name: impl
    type: agent
    adapter: claude
    spell: lim
`)
	r := p.exec("run", "g.yaml")
	wantCode(t, r, 3)
	s := p.only()
	if run := s.Runs["0"]; s.Status != state.StatusLimited || run == nil || run.Status != "limited" || s.Limit == nil || s.Limit.TaskID != "impl@0" {
		t.Fatalf("status %s, run %+v, limit %+v\n%s", s.Status, s.Runs["0"], s.Limit, r.stderr)
	}
	p.write("continued.jsonl", strings.Replace(limitDone, "Done after the limit.", "Done.\\n```json\\n{\\\"success\\\": true}\\n```", 1))
	r = p.exec("resume", s.ID)
	wantCode(t, r, 0)
	if argv := continuedArgv(t, p); !strings.Contains(argv, "--resume sess-l") {
		t.Errorf("resume did not continue the agent's session: %s", argv)
	}
}

// Gemini takes a refused turn back out of its session: refused on its
// first call, a run leaves no session to continue, and the task starts
// afresh after the limit (a mid-run limit continues, as above).
func TestGeminiFirstCallLimitStartsAfresh(t *testing.T) {
	t.Parallel()
	c := limitCases[2]
	p := limitProject(t, c, 2*time.Hour)
	p.write("limited.jsonl", strings.Replace(c.limited(2*time.Hour), `{"type":"message","role":"assistant","content":"Looking at it.","delta":true}`+"\n", "", 1))
	// The same prompt, which prints what limited.jsonl holds at the time.
	p.write("wf.yaml", strings.Replace(p.read("wf.yaml"), "cat=limited.jsonl exit=1", "cat=limited.jsonl", 1))
	r := p.exec("run", "wf.yaml")
	wantCode(t, r, 3)
	s := p.only()
	if s.Status != state.StatusLimited {
		t.Fatalf("status %s\n%s", s.Status, r.stderr)
	}
	// After the reset, the same prompt gets an answer.
	p.write("limited.jsonl", doneIn(c.format))
	r = p.exec("resume", s.ID)
	wantCode(t, r, 0)
	if argv := continuedArgv(t, p); strings.Contains(argv, "--resume") || !strings.Contains(argv, "cat=limited.jsonl") {
		t.Errorf("resume did not start the task afresh: %s", argv)
	}
}
