// Command fakeacp is an ACP agent (Agent Client Protocol, JSON-RPC 2.0 on
// stdio) for tests, scripted by the JSON file $FAKEACP_SCRIPT:
//
//	{"init": "answer",            // or "never" (never answers initialize), "error"
//	 "loadSession": true, "http": false, "sse": false,
//	 "sessionId": "s-1",          // the id session/new gives
//	 "modes": ["auto", "default"],  // the first is current
//	 "turns": [                   // one per prompt of a session, in order; the last repeats
//	   {"steps": [STEP, ...], "stop": "end_turn",
//	    "usage": {"inputTokens": 10, "outputTokens": 5},
//	    "error": {"code": -32000, "message": "..."}}]}   // answer the prompt with an error
//
// Steps: {"say": TEXT}, {"think": TEXT}, {"plan": [ENTRY]},
// {"tool": ID, "title": T, "kind": K, "input": {...}, "status": S},
// {"update": ID, "status": S, "output": TEXT},
// {"ask": ID, "title": T, "kind": K, "input": {...}, "options": [[ID, NAME, KIND], ...],
// "allowed": [STEP], "rejected": [STEP]} (asks permission; cancelled ends the turn),
// {"touch": FILE} (creates FILE in the session's cwd), {"cost": USD},
// {"waitCancel": true} (until session/cancel), {"sleep": MS},
// {"flood": N} (N one-byte message chunks), {"line": N} (a chunk of N bytes),
// {"planEntries": N} (a plan of N entries),
// {"die": CODE} (exits at once), {"meta": {...}} (an empty chunk with _meta).
//
// A session/cancel ends the turn (cancelled) before its next step. Every
// message received is appended to $FAKEACP_LOG; with $FAKEACP_TIMES (for
// benchmarks), "perm_ns N" (a permission request's round trip: sent to
// answer read), "result_ns T" (the Unix time a prompt's result was
// written), "stdin_closed_ns T" (when the client closed stdin) and, with
// "exitDelayMs" in the script, "exit_ns T" (its late exit) lines are
// appended to that file; sessions are kept in
// $FAKEACP_STATE (a directory) so that session/load after a restart
// continues them: the history is replayed, and the next prompt takes the
// next turn.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

type script struct {
	Init        string          `json:"init"`
	LoadSession bool            `json:"loadSession"`
	HTTP        bool            `json:"http"`
	SSE         bool            `json:"sse"`
	SessionID   string          `json:"sessionId"`
	Modes       []string        `json:"modes"`
	Turns       []turn          `json:"turns"`
	Version     int             `json:"protocolVersion"`
	Meta        json.RawMessage `json:"resultMeta"`
	// ExitDelay: once stdin is closed, the agent waits this many ms, says
	// so on stderr, then exits (a slow exit, as node's).
	ExitDelay int `json:"exitDelayMs"`
}

type turn struct {
	Steps []step          `json:"steps"`
	Stop  string          `json:"stop"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type step struct {
	Say        *string         `json:"say"`
	Think      string          `json:"think"`
	Plan       json.RawMessage `json:"plan"`
	Tool       string          `json:"tool"`
	Update     string          `json:"update"`
	Ask        string          `json:"ask"`
	Title      string          `json:"title"`
	Kind       string          `json:"kind"`
	Input      json.RawMessage `json:"input"`
	Status     string          `json:"status"`
	Output     string          `json:"output"`
	Options    [][3]string     `json:"options"`
	Allowed    []step          `json:"allowed"`
	Rejected   []step          `json:"rejected"`
	Touch      string          `json:"touch"`
	Cost       float64         `json:"cost"`
	WaitCancel bool            `json:"waitCancel"`
	Sleep      int             `json:"sleep"`
	Flood      int             `json:"flood"`
	Line       int             `json:"line"`
	PlanN      int             `json:"planEntries"`
	Die        *int            `json:"die"`
	Meta       json.RawMessage `json:"meta"`
}

type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type session struct {
	Turns   int      `json:"turns"`
	History []string `json:"history"`
	Cwd     string   `json:"cwd"`
}

type agent struct {
	sc     script
	out    *bufio.Writer
	outMu  sync.Mutex
	mu     sync.Mutex
	nextID int
	waits  map[string]chan msg
	cancel chan struct{} // closed by session/cancel during a turn
	sess   map[string]*session
}

func main() {
	a := &agent{out: bufio.NewWriterSize(os.Stdout, 1<<16), waits: map[string]chan msg{}, sess: map[string]*session{}}
	if data, err := os.ReadFile(os.Getenv("FAKEACP_SCRIPT")); err == nil {
		if err := json.Unmarshal(data, &a.sc); err != nil {
			fmt.Fprintln(os.Stderr, "fakeacp: script:", err)
			os.Exit(2)
		}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 64<<20)
	for in.Scan() {
		logLine(in.Bytes())
		var m msg
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		a.take(m)
	}
	// stdin closed: the client is gone; exit like the real agents do,
	// whatever a turn was waiting for.
	timed("stdin_closed_ns", time.Now().UnixNano())
	a.outMu.Lock()
	a.out.Flush()
	if a.sc.ExitDelay > 0 {
		time.Sleep(time.Duration(a.sc.ExitDelay) * time.Millisecond)
		fmt.Fprintln(os.Stderr, "fakeacp: exiting late")
		timed("exit_ns", time.Now().UnixNano())
	}
	os.Exit(0)
}

func logLine(line []byte) {
	path := os.Getenv("FAKEACP_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(append([]byte(nil), line...), '\n'))
}

func (a *agent) send(v any) {
	data, _ := json.Marshal(v)
	a.outMu.Lock()
	defer a.outMu.Unlock()
	a.out.Write(data)
	a.out.WriteByte('\n')
	a.out.Flush()
}

func (a *agent) reply(id json.RawMessage, result any) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (a *agent) fail(id json.RawMessage, code int, message string) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
}

func (a *agent) take(m msg) {
	if m.Method == "" { // a response to one of ours
		a.mu.Lock()
		ch := a.waits[string(m.ID)]
		delete(a.waits, string(m.ID))
		a.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return
	}
	var p struct {
		SessionID string          `json:"sessionId"`
		Cwd       string          `json:"cwd"`
		ModeID    string          `json:"modeId"`
		Prompt    json.RawMessage `json:"prompt"`
	}
	_ = json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "initialize":
		a.initialize(m)
	case "session/new":
		id := a.sc.SessionID
		if id == "" {
			id = fmt.Sprintf("sess-%d", time.Now().UnixNano())
		}
		a.save(id, &session{Cwd: p.Cwd})
		a.reply(m.ID, map[string]any{"sessionId": id, "modes": a.modes()})
	case "session/load":
		a.load(m, p.SessionID, p.Cwd)
	case "session/set_mode":
		a.reply(m.ID, map[string]any{})
	case "session/prompt":
		a.mu.Lock()
		a.cancel = make(chan struct{})
		cancel := a.cancel
		a.mu.Unlock()
		// The turn runs aside: cancels and permission answers still come.
		go a.prompt(m, p.SessionID, p.Prompt, cancel)
	case "session/cancel":
		a.mu.Lock()
		if a.cancel != nil {
			close(a.cancel)
			a.cancel = nil
		}
		a.mu.Unlock()
	default:
		if len(m.ID) > 0 {
			a.fail(m.ID, -32601, "method not found")
		}
	}
}

func (a *agent) initialize(m msg) {
	switch a.sc.Init {
	case "never":
		return
	case "error":
		a.fail(m.ID, -32603, "initialize failed on purpose")
		return
	}
	// As gemini --acp (0.61.0) does: the schema's clientInfo needs both
	// name and version, and an initialize without them is refused.
	var p struct {
		ClientInfo *struct {
			Name    *string `json:"name"`
			Version *string `json:"version"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(m.Params, &p)
	if ci := p.ClientInfo; ci != nil && (ci.Name == nil || ci.Version == nil) {
		a.fail(m.ID, -32603, "Internal error: clientInfo.name and clientInfo.version: expected string, received undefined")
		return
	}
	v := a.sc.Version
	if v == 0 {
		v = 1
	}
	a.reply(m.ID, map[string]any{
		"protocolVersion": v,
		"agentCapabilities": map[string]any{
			"loadSession":        a.sc.LoadSession,
			"promptCapabilities": map[string]any{"image": false, "audio": false, "embeddedContext": true},
			"mcpCapabilities":    map[string]any{"http": a.sc.HTTP, "sse": a.sc.SSE},
		},
		"authMethods": []any{},
		"agentInfo":   map[string]any{"name": "fakeacp", "version": "1.0.0"},
	})
}

func (a *agent) modes() any {
	if len(a.sc.Modes) == 0 {
		return nil
	}
	var avail []map[string]string
	for _, m := range a.sc.Modes {
		avail = append(avail, map[string]string{"id": m, "name": m})
	}
	return map[string]any{"currentModeId": a.sc.Modes[0], "availableModes": avail}
}

func statePath(id string) string {
	dir := os.Getenv("FAKEACP_STATE")
	if dir == "" {
		dir = filepath.Dir(os.Getenv("FAKEACP_SCRIPT"))
	}
	return filepath.Join(dir, "fakeacp-"+id+".json")
}

func (a *agent) save(id string, s *session) {
	a.mu.Lock()
	a.sess[id] = s
	data, _ := json.Marshal(s)
	a.mu.Unlock()
	_ = os.WriteFile(statePath(id), data, 0o644)
}

func (a *agent) load(m msg, id, cwd string) {
	data, err := os.ReadFile(statePath(id))
	var s session
	if err != nil || json.Unmarshal(data, &s) != nil {
		a.fail(m.ID, -32002, "session not found: "+id)
		return
	}
	for i, h := range s.History {
		kind := "user_message_chunk"
		if i%2 == 1 {
			kind = "agent_message_chunk"
		}
		a.update(id, map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": h}})
	}
	s.Cwd = cwd
	a.save(id, &s)
	a.reply(m.ID, map[string]any{"modes": a.modes()})
}

func (a *agent) update(id string, u map[string]any) {
	a.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": id, "update": u}})
}

func promptText(raw json.RawMessage) string {
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, x := range blocks {
		b.WriteString(x.Text)
	}
	return b.String()
}

func (a *agent) prompt(m msg, id string, prompt json.RawMessage, cancel chan struct{}) {
	a.mu.Lock()
	s := a.sess[id]
	a.mu.Unlock()
	if s == nil {
		a.fail(m.ID, -32002, "session not found: "+id)
		return
	}
	var t turn
	if n := len(a.sc.Turns); n > 0 {
		t = a.sc.Turns[min(s.Turns, n-1)]
	}
	s.Turns++
	s.History = append(s.History, promptText(prompt))
	r := &run{a: a, id: id, cwd: s.Cwd, cancel: cancel}
	stop := t.Stop
	if stop == "" {
		stop = "end_turn"
	}
	if !r.steps(t.Steps) {
		stop = "cancelled"
	}
	s.History = append(s.History, r.said.String())
	a.save(id, s)
	if len(t.Error) > 0 && stop != "cancelled" {
		a.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": t.Error})
		return
	}
	res := map[string]any{"stopReason": stop}
	if len(t.Usage) > 0 {
		res["usage"] = t.Usage
	}
	if len(a.sc.Meta) > 0 {
		res["_meta"] = a.sc.Meta
	}
	timed("result_ns", time.Now().UnixNano())
	a.reply(m.ID, res)
}

// timed appends "what n" to $FAKEACP_TIMES, when set.
func timed(what string, n int64) {
	path := os.Getenv("FAKEACP_TIMES")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %d\n", what, n)
}

// run is one turn's steps.
type run struct {
	a      *agent
	id     string
	cwd    string
	cancel chan struct{}
	said   strings.Builder
}

func (r *run) cancelled() bool {
	select {
	case <-r.cancel:
		return true
	default:
		return false
	}
}

// steps runs steps; false when the turn was cancelled.
func (r *run) steps(steps []step) bool {
	for _, s := range steps {
		if r.cancelled() || !r.step(s) {
			return false
		}
	}
	return true
}

func text(t string) map[string]any { return map[string]any{"type": "text", "text": t} }

func (r *run) step(s step) bool {
	a, id := r.a, r.id
	switch {
	case s.Say != nil:
		r.said.WriteString(*s.Say)
		a.update(id, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(*s.Say)})
	case s.Think != "":
		a.update(id, map[string]any{"sessionUpdate": "agent_thought_chunk", "content": text(s.Think)})
	case len(s.Plan) > 0:
		a.update(id, map[string]any{"sessionUpdate": "plan", "entries": s.Plan})
	case s.Tool != "":
		u := map[string]any{"sessionUpdate": "tool_call", "toolCallId": s.Tool, "title": s.Title, "kind": s.Kind, "status": or(s.Status, "pending")}
		if len(s.Input) > 0 {
			u["rawInput"] = s.Input
		}
		a.update(id, u)
	case s.Update != "":
		u := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": s.Update, "status": s.Status}
		if s.Output != "" {
			u["content"] = []any{map[string]any{"type": "content", "content": text(s.Output)}}
		}
		a.update(id, u)
	case s.Ask != "":
		return r.ask(s)
	case s.Touch != "":
		_ = os.WriteFile(filepath.Join(r.cwd, s.Touch), []byte("made by fakeacp\n"), 0o644)
	case s.Cost != 0:
		a.update(id, map[string]any{"sessionUpdate": "usage_update", "used": 1000, "size": 200000, "cost": map[string]any{"amount": s.Cost, "currency": "USD"}})
	case s.WaitCancel:
		<-r.cancel
		return false
	case s.Sleep > 0:
		select {
		case <-time.After(time.Duration(s.Sleep) * time.Millisecond):
		case <-r.cancel:
			return false
		}
	case s.Flood > 0:
		for i := 0; i < s.Flood; i++ {
			a.update(id, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text("x")})
		}
	case s.PlanN > 0:
		entries := make([]map[string]string, s.PlanN)
		for i := range entries {
			entries[i] = map[string]string{"content": "step", "status": "pending"}
		}
		a.update(id, map[string]any{"sessionUpdate": "plan", "entries": entries})
	case s.Line > 0:
		a.update(id, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(strings.Repeat("y", s.Line))})
	case s.Die != nil:
		a.outMu.Lock()
		a.out.Flush()
		os.Exit(*s.Die)
	case len(s.Meta) > 0:
		a.update(id, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(""), "_meta": s.Meta})
	}
	return true
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ask sends session/request_permission and goes on as the answer says.
func (r *run) ask(s step) bool {
	a := r.a
	a.mu.Lock()
	a.nextID++
	reqID := fmt.Sprintf("%d", 1000+a.nextID)
	ch := make(chan msg, 1)
	a.waits[reqID] = ch
	a.mu.Unlock()
	var opts []map[string]string
	for _, o := range s.Options {
		opts = append(opts, map[string]string{"optionId": o[0], "name": o[1], "kind": o[2]})
	}
	tc := map[string]any{"toolCallId": s.Ask, "title": s.Title, "kind": s.Kind, "status": "pending"}
	if len(s.Input) > 0 {
		tc["rawInput"] = s.Input
	}
	sent := time.Now()
	a.send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(reqID), "method": "session/request_permission",
		"params": map[string]any{"sessionId": r.id, "toolCall": tc, "options": opts}})
	ans := <-ch // answered even when cancelled, as the protocol requires
	timed("perm_ns", int64(time.Since(sent)))
	var res struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(ans.Result, &res)
	if res.Outcome.Outcome != "selected" {
		return false
	}
	for _, o := range s.Options {
		if o[0] == res.Outcome.OptionID {
			if strings.HasPrefix(o[2], "allow") {
				return r.steps(s.Allowed)
			}
			return r.steps(s.Rejected)
		}
	}
	return false
}
