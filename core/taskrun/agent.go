package taskrun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// agentResultLimit bounds the final message kept in a task's record: its
// end, where an agent step's JSON block is.
const agentResultLimit = 64 << 10

// agentStream follows a headless agent's structured stdout as it streams:
// each line becomes agent.* events and a readable line of the task's log
// (messages and tool calls, not JSON), and the run's summary builds up.
type agentStream struct {
	host   Host
	taskID string

	mu      sync.Mutex
	parser  agentstream.Parser
	lines   agentstream.Lines
	inDelta bool // a streamed message is being written: the next line starts anew
	spend   streamSpend
	// shownTools are the tool calls written to the log: an ACP agent
	// reports a call again on each status change, written once.
	shownTools map[string]bool
	// lost is the first line that could not be read, even cut (a JSON
	// document too large): what it said is unknown, so the run is not done.
	lost *agentstream.Line
}

func newAgentStream(host Host, taskID string, p agentstream.Parser) *agentStream {
	return &agentStream{host: host, taskID: taskID, parser: p}
}

// write takes a chunk of stdout and returns the readable text of the lines
// it completed.
func (s *agentStream) write(chunk []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var text strings.Builder
	s.lines.Write(chunk, func(line agentstream.Line) { s.feedLocked(line, &text) })
	return text.String()
}

// report takes events an agent reported other than as lines of its
// stdout (a protocol driver's decoded messages): they are emitted and
// metered as a stream's are, and their readable text is returned for the
// log.
func (s *agentStream) report(evs []agentstream.Event) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var text strings.Builder
	for _, ev := range evs {
		s.emitLocked(ev, &text)
	}
	if len(evs) > 0 {
		s.meterLocked()
	}
	return text.String()
}

// finish reads a last line without a newline and returns the run's summary.
func (s *agentStream) finish() (agentstream.Summary, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var text strings.Builder
	s.lines.Flush(func(line agentstream.Line) { s.feedLocked(line, &text) })
	if s.inDelta {
		text.WriteString("\n")
		s.inDelta = false
	}
	s.meterLocked()
	return s.parser.Summary(), text.String()
}

func (s *agentStream) feedLocked(ln agentstream.Line, text *strings.Builder) {
	line := ln.Text
	if ln.Lost {
		if s.lost == nil {
			s.lost = &agentstream.Line{Len: ln.Len, Text: []byte(excerpt.OneLine(string(line), 80))}
		}
		s.breakDeltaLocked(text)
		fmt.Fprintf(text, "· a line of %s could not be read: %s\n", sizeMB(ln.Len), s.lost.Text)
		return
	}
	evs := s.parser.Feed(line)
	if len(evs) == 0 && len(line) > 0 && line[0] != '{' {
		// Not the format's JSON (a warning the CLI printed): kept as is.
		s.breakDeltaLocked(text)
		text.Write(line)
		if ln.Cut {
			fmt.Fprintf(text, "… (a line of %s, cut)", sizeMB(ln.Len))
		}
		text.WriteString("\n")
		return
	}
	for _, ev := range evs {
		s.emitLocked(ev, text)
	}
	if len(evs) > 0 {
		s.meterLocked()
	}
}

func (s *agentStream) breakDeltaLocked(text *strings.Builder) {
	if s.inDelta {
		text.WriteString("\n")
		s.inDelta = false
	}
}

func (s *agentStream) emitLocked(ev agentstream.Event, text *strings.Builder) {
	host, id := s.host, s.taskID
	switch ev.Kind {
	case agentstream.Init:
		host.Emit(id, events.AgentStart{SessionID: ev.SessionID, Model: ev.Model, MCPServers: ev.MCPServers})
		s.breakDeltaLocked(text)
		fmt.Fprintf(text, "· agent session %s", ev.SessionID)
		if ev.Model != "" {
			fmt.Fprintf(text, " (%s)", ev.Model)
		}
		text.WriteString("\n")
		for _, m := range ev.MCPServers {
			fmt.Fprintf(text, "· mcp server %s: %s\n", m.Name, m.Status)
		}
	case agentstream.Message:
		host.Emit(id, events.AgentSaid{Text: ev.Text, Delta: ev.Delta})
		if ev.Delta {
			text.WriteString(ev.Text)
			s.inDelta = true
			return
		}
		s.breakDeltaLocked(text)
		text.WriteString(strings.TrimRight(ev.Text, "\n"))
		text.WriteString("\n")
	case agentstream.Thinking:
		host.Emit(id, events.AgentThought{Text: ev.Text})
		s.breakDeltaLocked(text)
		fmt.Fprintf(text, "· thinking: %s\n", excerpt.OneLine(ev.Text, 200))
	case agentstream.ToolCall:
		host.Emit(id, events.ToolCall{Tool: ev.Tool, ToolID: ev.ToolID, Input: rawOrNull(ev.Input), Status: ev.Status})
		s.toolCallLocked(ev, text)
	case agentstream.Plan:
		host.Emit(id, events.Plan{Entries: ev.Plan})
		s.breakDeltaLocked(text)
		text.WriteString("· plan:\n")
		for _, e := range ev.Plan {
			fmt.Fprintf(text, "  %s %s\n", e.Mark(), excerpt.OneLine(e.Content, 200))
		}
	case agentstream.ToolResult:
		host.Emit(id, events.ToolResult{Tool: ev.Tool, ToolID: ev.ToolID, Output: ev.Output, IsError: ev.IsError, DurationMS: ev.DurationMS})
		s.breakDeltaLocked(text)
		toolResultText(ev, text)
	case agentstream.Usage:
		if ev.Tokens != nil {
			host.Emit(id, events.Usage{
				InputTokens: ev.Tokens.Input, OutputTokens: ev.Tokens.Output,
				CacheReadTokens: ev.Tokens.CacheRead, CacheWriteTokens: ev.Tokens.CacheWrite,
			})
		}
	case agentstream.Error:
		host.Emit(id, events.AgentFailure{Error: ev.Text})
		s.breakDeltaLocked(text)
		fmt.Fprintf(text, "· error: %s\n", excerpt.OneLine(ev.Text, 500))
	case agentstream.Warning:
		host.Emit(id, events.Warn{Warning: "task " + id + ": " + ev.Text})
		s.breakDeltaLocked(text)
		fmt.Fprintf(text, "· warning: %s\n", excerpt.OneLine(ev.Text, 500))
	}
}

// toolCallLocked writes a tool call's line to the task's text, once per
// tool id: the same call seen again (its status updated) is not written
// again.
func (s *agentStream) toolCallLocked(ev agentstream.Event, text *strings.Builder) {
	if ev.ToolID != "" && s.shownTools[ev.ToolID] {
		return
	}
	if ev.ToolID != "" && ev.Status != "" {
		if s.shownTools == nil {
			s.shownTools = map[string]bool{}
		}
		s.shownTools[ev.ToolID] = true
	}
	s.breakDeltaLocked(text)
	fmt.Fprintf(text, "▸ %s %s\n", ev.Tool, excerpt.OneLine(string(ev.Input), 300))
}

// toolResultText writes a tool's result to the task's text: its first
// five lines.
func toolResultText(ev agentstream.Event, text *strings.Builder) {
	mark := "⎿"
	if ev.IsError {
		mark = "⎿ error:"
	}
	out := strings.Split(strings.TrimRight(ev.Output, "\n"), "\n")
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("… (%d more lines)", len(out)-5))
	}
	for i, l := range out {
		if i == 0 {
			fmt.Fprintf(text, "  %s %s\n", mark, excerpt.OneLine(l, 300))
		} else {
			fmt.Fprintf(text, "    %s\n", excerpt.OneLine(l, 300))
		}
	}
}

// sizeMB is a line's length for a person, in MB.
func sizeMB(n int64) string {
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

// unreadable is the failure of a run whose stream held a line that could
// not be read; nil if there was none.
func (s *agentStream) unreadable() *string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost == nil {
		return nil
	}
	msg := fmt.Sprintf("the agent's result could not be read (%s line: %s)", sizeMB(s.lost.Len), s.lost.Text)
	return &msg
}

func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || !json.Valid(r) {
		return json.RawMessage("null") // as it reads back
	}
	return r
}

// recordSummary is the summary as a task's record keeps it: the final
// message's end only.
func recordSummary(sum agentstream.Summary) *agentstream.Summary {
	sum.Result = excerpt.Tail(sum.Result, agentResultLimit)
	return &sum
}

// denialText describes the denials for a person: the tool and its input.
func denialText(ds []agentstream.Denial) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Tool)
		if len(d.Input) > 0 {
			b.WriteString(" " + excerpt.OneLine(string(d.Input), 200))
		}
		if d.Message != "" {
			b.WriteString(" (" + excerpt.OneLine(d.Message, 200) + ")")
		}
	}
	return b.String()
}

// Reasons a structured report fails or parks a task that exited.
const (
	agentErrorReason = vocab.ReasonAgentError
	DeniedReason     = vocab.ReasonDenied
	QuestionReason   = vocab.ReasonQuestion
	UnreadableReason = vocab.ReasonUnreadable
)

// judgeAgent reads what the agent's stream said once its process is gone:
// the summary goes in the task's record, and a run the agent reports as
// failed, or one with a tool call it was refused, is not DONE whatever the
// exit code. judged is false when the exit code decides (the agent said
// nothing against it).
func (tr *Attempt) judgeAgent(res runner.Result) (st state.TaskStatus, reason vocab.Reason, msg string, judged bool) {
	host, t := tr.host, tr.task
	sum, text := tr.stream.finish()
	if text != "" && tr.log != nil {
		_, _ = tr.log.Write([]byte(text))
	}
	if tr.codexHome != "" && res.Success() && !sum.IsError && len(sum.Denials) == 0 {
		// codex exec says nothing of what its sandbox refused; its
		// thread's rollout file does.
		sum.Denials = agentstream.CodexSandboxDenials(tr.codexHome, sum.SessionID, tr.startedAt)
	}
	host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Agent = recordSummary(sum) })
	if res.Signal != "" || res.Err != nil {
		return "", "", "", false
	}
	if sum.Limit != nil {
		return tr.judgeLimit(sum)
	}
	if sum.IsError {
		msg := sum.Error
		if msg == "" {
			msg = "no message"
		}
		return state.TaskError, agentErrorReason, fmt.Sprintf("the agent reported an error: %s", excerpt.OneLine(msg, 1000)), true
	}
	if msg := tr.stream.unreadable(); msg != nil {
		// A DONE needs a result that was read: this line may have been
		// it, with an error, a cost, a denial.
		return state.TaskError, UnreadableReason, *msg, true
	}
	if !res.Success() {
		return "", "", "", false
	}
	if len(sum.Denials) == 0 {
		return tr.judgeQuestion(sum)
	}
	what := denialText(sum.Denials)
	for _, d := range sum.Denials {
		host.Emit(t.ID, events.Denial{Tool: d.Tool, ToolID: d.ToolID, Input: rawOrNull(d.Input), Message: d.Message})
	}
	excerpt := "denied: " + what
	host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Excerpt = excerpt })
	tools := sum.DeniedTools()
	decision := PermissionLater
	switch {
	case sum.SessionID != "" && tr.cfg.Interaction != InteractionFail && host.AllowedForRun(tools):
		// Allowed for the run already, by the person at this terminal.
		decision = PermissionOnce
	case tr.cfg.Interaction == InteractionAsk && tr.cfg.Permission != nil && sum.SessionID != "":
		decision = tr.cfg.Permission(tr.ctx, PermissionRequest{TaskID: t.ID, Name: t.DisplayName(), Adapter: t.Adapter, Denials: sum.Denials, Tools: tools})
	}
	switch {
	case tr.cfg.Interaction == InteractionFail:
		return state.TaskError, DeniedReason, "the agent was denied " + what + " (--on-interaction=fail)", true
	case decision == PermissionDeny:
		return state.TaskError, DeniedReason, "the agent was denied " + what + ", and you kept it so", true
	case decision == PermissionOnce || decision == PermissionAll:
		// Continue the agent's session at once, with the tools allowed:
		// for this continuation only, or for the rest of the run.
		if decision == PermissionAll {
			host.AllowForRun(tools)
			host.UpdateRecord(t.ID, true, func(rec *state.TaskRecord) { rec.Allow(tools...) })
		}
		tr.next = &followUp{allow: tools}
		return state.TaskWaitingForUser, DeniedReason, "the agent was denied " + what + "; allowed, its session continues", true
	default:
		// The run is over and its process gone: what a person can do is
		// allow the tools and continue the agent's own session.
		host.Park(state.StatusWaiting, t.ID, fmt.Sprintf("task %s: the agent was denied %s; allow it with: vibeteam resume ID --allow %s", t.ID, what, strings.Join(tools, " --allow ")))
		return state.TaskWaitingForUser, DeniedReason, "the agent was denied " + what, true
	}
}

// judgeQuestion asks the person the question the agent's final message
// ends with, if it ends with one: the run stopped to ask, it is not done.
// A message that reports the step's JSON result answers for itself.
func (tr *Attempt) judgeQuestion(sum agentstream.Summary) (st state.TaskStatus, reason vocab.Reason, msg string, judged bool) {
	host, t := tr.host, tr.task
	if !sum.HasResult || sum.SessionID == "" || strings.Contains(sum.Result, "```json") {
		return "", "", "", false
	}
	q := agentstream.DetectQuestion(sum.Result)
	if q == nil {
		return "", "", "", false
	}
	excerpt := "asks: " + q.Text
	if len(q.Options) > 0 {
		excerpt += " [" + strings.Join(q.Options, " | ") + "]"
	}
	host.UpdateRecord(t.ID, false, func(rec *state.TaskRecord) { rec.Excerpt, rec.Question = excerpt, q })
	host.Emit(t.ID, events.Question{QuestionKind: string(q.Kind), Text: q.Text, Options: q.Options})
	answer := ""
	if tr.cfg.Interaction == InteractionAsk && tr.cfg.Question != nil {
		answer = tr.cfg.Question(tr.ctx, QuestionRequest{TaskID: t.ID, Name: t.DisplayName(), Adapter: t.Adapter, Question: *q})
	}
	switch {
	case tr.cfg.Interaction == InteractionFail:
		return state.TaskError, QuestionReason, "the agent asks: " + q.Text + " (--on-interaction=fail)", true
	case answer != "":
		tr.next = &followUp{answer: answer}
		return state.TaskWaitingForUser, QuestionReason, "the agent asked: " + q.Text + "; answered, its session continues", true
	}
	host.Park(state.StatusWaiting, t.ID, fmt.Sprintf("task %s: the agent asks: %s; answer with: vibeteam resume ID --answer TEXT", t.ID, q.Text))
	return state.TaskWaitingForUser, QuestionReason, "the agent asks: " + q.Text, true
}

// QuestionRequest is the question a headless agent's final message asks.
type QuestionRequest struct {
	TaskID, Name, Adapter string
	Question              agentstream.Question
}

// followUp is what continues an agent's session: tools a person allowed
// after a denial, or their answer to the agent's question.
type followUp struct {
	allow  []string
	answer string
	// limit: the usage limit was waited out; limitWaited is how long the
	// task has waited for limits so far, limitTries how many times.
	limit       bool
	limitWaited time.Duration
	limitTries  int
}

// continuation is the agent session a headless task continues, and the
// prompt that continues it: after a denial, once a person allowed tools
// (resume --allow, or at the terminal: now, for this continuation only);
// after a question, once they answered it (resume --answer, or now). nil
// otherwise: the task starts afresh.
func continuation(mode adapters.Mode, prev state.TaskRecord, now *followUp) (*adapters.Continuation, string) {
	if mode == adapters.ACP {
		return acpContinuation(prev, now)
	}
	if mode != adapters.Headless || prev.Agent == nil || prev.Agent.SessionID == "" {
		return nil, ""
	}
	if prev.Agent.SessionLost != "" {
		// A session the agent could not save (claude's
		// session_writes_lost) cannot be continued: a fresh one starts,
		// told so (lostSessionNote), with what a person allowed.
		allowed := slices.Clone(prev.Allowed)
		if now != nil {
			allowed = append(allowed, now.allow...)
		}
		return &adapters.Continuation{Fresh: true, Allow: allowed}, ""
	}
	switch prev.Reason {
	case DeniedReason:
		prev.Allowed = slices.Clone(prev.Allowed)
		if now != nil {
			prev.Allow(now.allow...)
		}
		if len(prev.Allowed) == 0 {
			return nil, ""
		}
		return &adapters.Continuation{Session: prev.Agent.SessionID, Allow: prev.Allowed}, grantMessage(prev.Allowed)
	case QuestionReason:
		answer := prev.Answer
		if now != nil && now.answer != "" {
			answer = now.answer
		}
		if answer == "" {
			return nil, ""
		}
		return &adapters.Continuation{Session: prev.Agent.SessionID, Allow: slices.Clone(prev.Allowed)}, answer
	case LimitReason:
		if l := prev.Agent.Limit; l != nil && l.RolledBack && !slices.Contains(prev.Argv, prev.Agent.SessionID) {
			// Refused before the agent said anything, in a session the run
			// began, which the CLI took the turn back out of (gemini):
			// nothing to continue, and nothing lost by starting afresh.
			return nil, ""
		}
		// The turn the limit refused never ran: the session goes on
		// where it stopped (resume, or after waiting it out).
		return &adapters.Continuation{Session: prev.Agent.SessionID, Allow: slices.Clone(prev.Allowed)}, limitContinue
	}
	return nil, ""
}

// PermissionRequest is what a person is asked when a headless agent was
// denied tool calls: the calls, and the tools allowing would allow.
type PermissionRequest struct {
	TaskID, Name, Adapter string
	Denials               []agentstream.Denial
	Tools                 []string
}

// A person's answers to a PermissionRequest.
const (
	PermissionOnce  = "once"  // allow the tools for this continuation
	PermissionAll   = "all"   // allow them for the rest of the run
	PermissionDeny  = "deny"  // the task fails
	PermissionLater = "later" // park: resume ID --allow TOOL later
)

// lostSessionNote is the first prompt of a task whose last run's agent
// session was lost (not saved by the agent, so not continued): the task's
// own prompt, after a note that earlier work may be in the tree, and the
// warning the person sees. "" when prev's session was not lost.
func lostSessionNote(prev state.TaskRecord, prompt string) (note, warning string) {
	if prev.Agent == nil || prev.Agent.SessionLost == "" {
		return "", ""
	}
	note = "Note: an earlier run of this task was interrupted and its session could not be saved, so this is a fresh session. " +
		"Some of the work may already be done in this working tree: check before redoing it.\n\n" + prompt
	warning = fmt.Sprintf("the agent session %s of the last run was not saved (%s): starting a fresh session", prev.Agent.SessionID, prev.Agent.SessionLost)
	return note, warning
}

// grantMessage tells an agent whose tool call was denied that it may now
// make it: CLIs do not retry a denied call by themselves.
func grantMessage(allowed []string) string {
	return "Permission granted: you may now use " + strings.Join(allowed, ", ") + ". Please run what was denied again, then continue with the task."
}

// codexHome is where codex keeps its threads for a task run with env:
// CODEX_HOME (the task's, else vibeteam's), else ~/.codex.
func codexHome(env map[string]string) string {
	if h := env["CODEX_HOME"]; h != "" {
		return h
	}
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".codex")
	}
	return ""
}
