package agentstream

import (
	"encoding/json"
	"strings"
	"time"
)

// opencodeParser reads opencode run --format json.
type opencodeParser struct {
	sum    Summary
	inited bool
	// announced holds the calls shown while still running, so their
	// completion neither repeats nor recounts the ToolCall.
	announced map[string]bool
}

type opencodeLine struct {
	Type      string          `json:"type"`
	SessionID string          `json:"sessionID"`
	Part      *opencodePart   `json:"part"`
	Error     json.RawMessage `json:"error"`
}

type opencodePart struct {
	Type   string  `json:"type"`
	Text   string  `json:"text"`
	Tool   string  `json:"tool"`
	CallID string  `json:"callID"`
	Cost   float64 `json:"cost"`
	State  *struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output string          `json:"output"`
		Error  string          `json:"error"`
		Time   *struct {
			// Milliseconds; float in case a runtime writes them so.
			Start float64 `json:"start"`
			End   float64 `json:"end"`
		} `json:"time"`
	} `json:"state"`
	Tokens *struct {
		Input  int64 `json:"input"`
		Output int64 `json:"output"`
		Cache  struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
}

func (p *opencodeParser) Feed(line []byte) []Event {
	var l opencodeLine
	if !unmarshalObjectLine(line, &l) {
		return nil
	}
	if p.sum.SessionID == "" {
		p.sum.SessionID = l.SessionID
	}
	if l.Type == "error" {
		return p.fail(l.Error)
	}
	if l.Part == nil {
		return nil
	}
	switch l.Type {
	case "step_start":
		p.sum.Turns++
		if p.inited {
			return nil
		}
		p.inited = true
		return []Event{{Kind: Init, SessionID: l.SessionID}}
	case "text":
		p.sum.Result = l.Part.Text
		p.sum.HasResult = true
		return []Event{{Kind: Message, Text: l.Part.Text}}
	case "reasoning":
		return []Event{{Kind: Thinking, Text: l.Part.Text}}
	case "tool_use":
		return p.tool(l.Part)
	case "step_finish":
		p.sum.CostUSD += l.Part.Cost
		if l.Part.Tokens == nil {
			return nil
		}
		tk := l.Part.Tokens
		t := Tokens{Input: tk.Input, Output: tk.Output, CacheRead: tk.Cache.Read, CacheWrite: tk.Cache.Write}
		// Each step reports its own API call, so the run is their sum.
		p.sum.Tokens.Add(t)
		return []Event{{Kind: Usage, Tokens: &t}}
	}
	return nil
}

func (p *opencodeParser) tool(part *opencodePart) []Event {
	if part.State == nil {
		return nil
	}
	st := part.State
	var evs []Event
	if !p.announced[part.CallID] {
		p.sum.ToolCalls++
		evs = append(evs, Event{Kind: ToolCall, ToolID: part.CallID, Tool: part.Tool, Input: normToolInput(st.Input)})
	}
	if st.Status != "completed" && st.Status != "error" {
		if p.announced == nil {
			p.announced = map[string]bool{}
		}
		p.announced[part.CallID] = true
		return evs
	}
	delete(p.announced, part.CallID)
	res := Event{Kind: ToolResult, ToolID: part.CallID, Tool: part.Tool, Output: st.Output, IsError: st.Status == "error"}
	if res.IsError && res.Output == "" {
		res.Output = st.Error
	}
	res.Output = boundToolOutput(res.Output)
	if st.Time != nil && st.Time.Start > 0 && st.Time.End >= st.Time.Start {
		res.DurationMS = int64(st.Time.End - st.Time.Start)
	}
	if e := strings.ToLower(st.Error); strings.Contains(e, "permission") || strings.Contains(e, "rejected") {
		p.sum.Denials = append(p.sum.Denials, Denial{Tool: part.Tool, ToolID: part.CallID, Input: normToolInput(st.Input), Message: st.Error})
	}
	return append(evs, res)
}

func (p *opencodeParser) fail(raw json.RawMessage) []Event {
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message      string `json:"message"`
			StatusCode   int    `json:"statusCode"`
			ResponseBody string `json:"responseBody"`
		} `json:"data"`
	}
	msg := ""
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &e) == nil {
		msg = e.Data.Message
		if msg == "" {
			msg = e.Name
		}
	}
	if msg == "" {
		msg, _ = errorMessageText(raw)
	}
	if msg == "" {
		msg = "opencode reported an error"
	}
	p.sum.IsError = true
	p.sum.Error = msg
	// opencode retries a 429 by itself, for as long as it takes; what it
	// reports is a limit the provider refused for good (a spend cap,
	// insufficient_quota), said in the message or the response's body.
	if lim, ok := LimitText(msg+"\n"+e.Data.ResponseBody, time.Now()); ok || e.Data.StatusCode == 429 {
		if lim == nil {
			// A 429 in words no mark knows: its reset, if it names one.
			lim = &Limit{ResetAt: ResetTime(msg+"\n"+e.Data.ResponseBody, time.Now())}
		}
		lim.Message = msg
		p.sum.Limit = lim
	}
	return []Event{{Kind: Error, Text: msg}}
}

func (p *opencodeParser) Summary() Summary { return cloneSummary(p.sum) }
