package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

// Permission is a session/request_permission: a tool call the agent
// wants to make, and the answers it offers.
type Permission struct {
	ToolID  string
	Tool    string // the tool's name (see toolName): what `resume --allow` names
	Title   string // what the agent says the call does
	Input   json.RawMessage
	Options []PermissionOption
}

// Decision is the answer to a Permission: an option, or Cancel (the
// request is answered cancelled), or Park (answered cancelled, and the
// turn is cancelled: the task waits for a person's `resume --allow`).
type Decision struct {
	OptionID string
	Cancel   bool
	Park     bool
}

// Decider answers a permission request. ctx is cancelled when the turn
// is (the request is then answered cancelled whatever Decide returns).
type Decider func(ctx context.Context, p Permission) Decision

// OptionOfKind is the first option of the first kind in kinds that p
// offers, by kind, never by position or name.
func (p Permission) OptionOfKind(kinds ...string) (PermissionOption, bool) {
	for _, k := range kinds {
		for _, o := range p.Options {
			if o.Kind == k {
				return o, true
			}
		}
	}
	return PermissionOption{}, false
}

// Allow is the decision that allows the call once (or, when the agent
// offers no such option, always); Cancel when it offers neither.
func (p Permission) Allow() Decision {
	if o, ok := p.OptionOfKind(AllowOnce, AllowAlways); ok {
		return Decision{OptionID: o.ID}
	}
	return Decision{Cancel: true}
}

// Reject is the decision that rejects the call once (or always).
func (p Permission) Reject() Decision {
	if o, ok := p.OptionOfKind(RejectOnce, RejectAlways); ok {
		return Decision{OptionID: o.ID}
	}
	return Decision{Cancel: true}
}

// Policy is how a run answers permissions.
type Policy struct {
	// AutoApprove (--auto-approve) allows every call.
	AutoApprove bool
	// Allowed are tools a person allowed (`resume --allow TOOL`): a call
	// of one is allowed; "*" allows all.
	Allowed []string
	// Ask asks a person (at a terminal); nil parks the request.
	Ask Decider
}

// Decide answers p by the policy.
func (pol Policy) Decide(ctx context.Context, p Permission) Decision {
	if pol.AutoApprove || pol.allows(p.Tool) {
		return p.Allow()
	}
	if pol.Ask != nil {
		return pol.Ask(ctx, p)
	}
	return Decision{Park: true}
}

func (pol Policy) allows(tool string) bool {
	for _, a := range pol.Allowed {
		if a == "*" || strings.EqualFold(a, tool) {
			return true
		}
	}
	return false
}

// toolName names a tool call for a person and for `--allow`: claude's own
// tool name when its adapter gives it (Bash, Write, ...), else the
// call's kind (execute, edit, ...), else its title.
func toolName(meta json.RawMessage, kind, title string) string {
	var m struct {
		Claude struct {
			ToolName string `json:"toolName"`
		} `json:"claudeCode"`
	}
	if len(meta) > 0 && json.Unmarshal(meta, &m) == nil && m.Claude.ToolName != "" {
		return m.Claude.ToolName
	}
	if kind != "" {
		return kind
	}
	return title
}

// permission takes a session/request_permission: its Decider answers it
// on a goroutine of its own (a person may take minutes, while the
// agent's updates go on), unless the turn is cancelled first.
func (c *Client) permission(m *message) {
	var req permissionParams
	if err := json.Unmarshal(m.Params, &req); err != nil {
		_ = c.conn.reply(m.ID, nil, &RPCError{Code: codeInvalidParams, Message: "invalid session/request_permission: " + err.Error()})
		return
	}
	tc := req.ToolCall
	c.mu.Lock()
	known := c.turn.tools[tc.ToolCallID]
	c.mu.Unlock()
	p := Permission{ToolID: tc.ToolCallID, Title: tc.Title, Input: normInput(tc.RawInput), Options: req.Options}
	if p.Title == "" && known != nil {
		p.Title = known.title
	}
	if len(p.Input) == 0 && known != nil {
		p.Input = known.input
	}
	p.Tool = toolName(tc.Meta, tc.ToolKind, p.Title)
	if known != nil && (tc.ToolKind == "" && len(tc.Meta) == 0) {
		p.Tool = known.name
	}
	ctx, cancel := context.WithCancel(context.Background())
	key := idKey(m.ID)
	c.mu.Lock()
	c.pending[key] = &pendingPerm{id: m.ID, cancel: cancel}
	c.mu.Unlock()
	decide := c.opts.Decide
	if decide == nil {
		decide = func(context.Context, Permission) Decision { return Decision{Cancel: true} }
	}
	c.perms.Add(1)
	go func() {
		defer c.perms.Done()
		defer cancel()
		d := decide(ctx, p)
		c.mu.Lock()
		pend, ok := c.pending[key]
		if ok && d.Park {
			c.parked = true
			c.turn.sum.Denials = append(c.turn.sum.Denials, agentstream.Denial{Tool: p.Tool, ToolID: p.ToolID, Input: p.Input, Message: parkMessage(p)})
		} else {
			delete(c.pending, key)
		}
		c.mu.Unlock()
		switch {
		case !ok:
			// The turn was cancelled: answered cancelled already.
		case d.Park:
			// session/cancel, then every pending request (this one too)
			// answered cancelled.
			_ = c.Cancel()
		case d.OptionID != "" && !d.Cancel:
			_ = c.conn.reply(pend.id, permissionResult{Outcome: permissionOutcome{Outcome: "selected", OptionID: d.OptionID}}, nil)
		default:
			_ = c.conn.reply(pend.id, permissionResult{Outcome: permissionOutcome{Outcome: "cancelled"}}, nil)
		}
	}()
}

// parkMessage says what the agent asked, for `show`.
func parkMessage(p Permission) string {
	names := make([]string, len(p.Options))
	for i, o := range p.Options {
		names[i] = fmt.Sprintf("%q (%s)", o.Name, o.Kind)
	}
	return fmt.Sprintf("the agent asks to run %s: %s; options: %s", p.Tool, p.Title, strings.Join(names, ", "))
}
