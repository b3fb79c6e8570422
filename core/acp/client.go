package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

// DefaultInitTimeout is how long an agent has to answer initialize: the
// slowest of the five agents probed took 4 s (opencode).
const DefaultInitTimeout = 60 * time.Second

// Options configure a Client.
type Options struct {
	// Agent names the agent in errors (the adapter's name, and its
	// command).
	Agent string
	// InitTimeout bounds the wait for initialize's answer (0:
	// DefaultInitTimeout).
	InitTimeout time.Duration
	// OnEvent gets each event, in order, on the goroutine that reads the
	// agent: a slow OnEvent slows the agent, and loses nothing.
	OnEvent func(agentstream.Event)
	// Decide answers the agent's permission requests; nil refuses each
	// (cancelled).
	Decide Decider
	// Version is vibeteam's, told to the agent ("": the module's version
	// as the build recorded it).
	Version string
	// Now is the clock (limits' reset times); nil: time.Now.
	Now func() time.Time
}

// Client is one connection to one agent process.
type Client struct {
	opts Options
	conn *conn

	served   chan struct{} // closed when the connection ended
	serveErr error         // why, once served is closed
	perms    sync.WaitGroup

	mu      sync.Mutex
	info    AgentInfo
	session string
	turn    turnState
	loading bool                    // session/load replays history: not new events
	pending map[string]*pendingPerm // permission requests not answered yet, by request id
	parked  bool                    // a permission was parked: the turn was cancelled for it
}

// pendingPerm is a permission request waiting for its Decider.
type pendingPerm struct {
	id     json.RawMessage
	cancel context.CancelFunc
}

// Start serves the connection to an agent whose stdin is w and whose
// stdout is r. Close w (the agent's stdin) or stop the process to end it,
// then Wait.
func Start(w io.Writer, r io.Reader, opts Options) *Client {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = DefaultInitTimeout
	}
	c := &Client{opts: opts, conn: newConn(w), served: make(chan struct{}), pending: map[string]*pendingPerm{}}
	c.turn.init()
	go func() {
		err := c.conn.serve(r, c.handle)
		c.mu.Lock()
		c.serveErr = err
		c.mu.Unlock()
		close(c.served)
	}()
	return c
}

// Done is closed once the connection has ended (the agent's output
// closed, or a message could not be read).
func (c *Client) Done() <-chan struct{} { return c.served }

// Wait waits for the connection to end and for every permission answer
// in flight, and returns why the connection ended.
func (c *Client) Wait() error {
	<-c.served
	c.cancelPending()
	c.perms.Wait()
	return c.Err()
}

// Err is why the connection ended; nil while it is up.
func (c *Client) Err() error {
	select {
	case <-c.served:
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serveErr
}

// call sends a request and waits for its answer, for ctx.
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	id, ch, err := c.conn.start(method, params)
	if err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		if result != nil && len(r.result) > 0 && string(r.result) != "null" {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("%s: the agent's answer is not the protocol's: %v", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.conn.forget(id)
		return ctx.Err()
	}
}

// Initialize is the handshake: the protocol version and capabilities. An
// agent that does not answer within the init timeout is an error (the
// command is not an ACP agent, or waits for something).
func (c *Client) Initialize(ctx context.Context) (AgentInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.InitTimeout)
	defer cancel()
	var info AgentInfo
	err := c.call(ctx, methodInitialize, initializeParams{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      implementation{Name: "vibeteam", Title: "vibeteam", Version: clientVersion(c.opts.Version)},
	}, &info)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return info, fmt.Errorf("agent %s did not answer initialize within %s: is it an ACP agent (speaking JSON-RPC on stdio)?", c.opts.Agent, c.opts.InitTimeout)
	case err != nil:
		return info, fmt.Errorf("agent %s: initialize: %w", c.opts.Agent, err)
	case info.ProtocolVersion != ProtocolVersion:
		return info, fmt.Errorf("agent %s speaks ACP protocol version %d; vibeteam speaks %d", c.opts.Agent, info.ProtocolVersion, ProtocolVersion)
	}
	c.mu.Lock()
	c.info = info
	c.mu.Unlock()
	return info, nil
}

// Info is the agent's initialize answer.
func (c *Client) Info() AgentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// NewSession makes the agent's session in cwd, with servers as the
// agent's MCP capabilities allow.
func (c *Client) NewSession(ctx context.Context, cwd string, servers []MCPServer) (Session, error) {
	wire, err := mcpWire(c.opts.Agent, c.Info().AgentCapabilities.MCPCapabilities, servers)
	if err != nil {
		return Session{}, err
	}
	var s Session
	if err := c.call(ctx, methodSessionNew, newSessionParams{Cwd: cwd, MCPServers: wire}, &s); err != nil {
		return s, fmt.Errorf("agent %s: session/new: %w", c.opts.Agent, err)
	}
	if s.ID == "" {
		return s, fmt.Errorf("agent %s: session/new answered no sessionId", c.opts.Agent)
	}
	c.setSession(s.ID)
	return s, nil
}

// LoadSession continues the agent's session id (after a restart). The
// history the agent replays is not reported again as events.
func (c *Client) LoadSession(ctx context.Context, id, cwd string, servers []MCPServer) (Session, error) {
	info := c.Info()
	if !info.AgentCapabilities.LoadSession {
		return Session{}, fmt.Errorf("agent %s cannot load a session (it does not advertise loadSession): session %s cannot be continued", c.opts.Agent, id)
	}
	wire, err := mcpWire(c.opts.Agent, info.AgentCapabilities.MCPCapabilities, servers)
	if err != nil {
		return Session{}, err
	}
	c.mu.Lock()
	c.session, c.loading = id, true
	c.mu.Unlock()
	var s Session
	err = c.call(ctx, methodSessionLoad, loadSessionParams{SessionID: id, Cwd: cwd, MCPServers: wire}, &s)
	c.mu.Lock()
	c.loading = false
	c.mu.Unlock()
	if err != nil {
		return s, fmt.Errorf("agent %s: session/load %s: %w", c.opts.Agent, id, err)
	}
	s.ID = id
	c.setSession(id)
	return s, nil
}

func (c *Client) setSession(id string) {
	c.mu.Lock()
	c.session = id
	c.turn.sum.SessionID = id
	c.mu.Unlock()
	c.emit([]agentstream.Event{{Kind: agentstream.Init, SessionID: id}})
}

// SessionID is the agent's session id ("" before one).
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// SetMode sets the session's mode.
func (c *Client) SetMode(ctx context.Context, mode string) error {
	if err := c.call(ctx, methodSessionSetMode, setModeParams{SessionID: c.SessionID(), ModeID: mode}, nil); err != nil {
		return fmt.Errorf("agent %s: session/set_mode %s: %w", c.opts.Agent, mode, err)
	}
	return nil
}

// Prompt sends one prompt and waits for the turn's end: its result, or
// the JSON-RPC error the agent answered, or the connection's end. A
// cancelled ctx cancels the turn (session/cancel) and still waits for
// the agent's answer, which Cancel's caller bounds by stopping the agent.
func (c *Client) Prompt(ctx context.Context, text string) (PromptResult, error) {
	c.mu.Lock()
	c.turn.begin()
	c.mu.Unlock()
	_, ch, err := c.conn.start(methodSessionPrompt, promptParams{SessionID: c.SessionID(), Prompt: []contentBlock{{Type: "text", Text: text}}})
	if err != nil {
		return PromptResult{}, err
	}
	var r response
	select {
	case r = <-ch:
	case <-ctx.Done():
		_ = c.Cancel()
		r = <-ch // answered, or failed when the connection ends
	}
	if r.err != nil {
		return PromptResult{}, r.err
	}
	var res PromptResult
	if err := json.Unmarshal(r.result, &res); err != nil {
		return res, fmt.Errorf("session/prompt: the agent's answer is not the protocol's: %v", err)
	}
	c.mu.Lock()
	evs := c.turn.endTurn(res)
	c.mu.Unlock()
	c.emit(evs)
	return res, nil
}

// Cancel cancels the turn (session/cancel), then answers every pending
// permission request cancelled, as the protocol requires.
func (c *Client) Cancel() error {
	err := c.conn.notify(methodSessionCancel, cancelParams{SessionID: c.SessionID()})
	c.cancelPending()
	return err
}

// cancelPending answers every pending permission request cancelled.
func (c *Client) cancelPending() {
	c.mu.Lock()
	waiting := c.pending
	c.pending = map[string]*pendingPerm{}
	c.mu.Unlock()
	for _, p := range waiting {
		p.cancel()
		_ = c.conn.reply(p.id, permissionResult{Outcome: permissionOutcome{Outcome: "cancelled"}}, nil)
	}
}

// Summary is what the run has said so far, as a headless parser's summary.
func (c *Client) Summary() agentstream.Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turn.summary()
}

// Parked reports whether a permission request was parked.
func (c *Client) Parked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parked
}

func (c *Client) emit(evs []agentstream.Event) {
	if c.opts.OnEvent == nil {
		return
	}
	for _, ev := range evs {
		c.opts.OnEvent(ev)
	}
}

// handle takes one request or notification of the agent's, on the
// reading goroutine.
func (c *Client) handle(m *message) {
	switch {
	case m.Method == methodSessionUpdate && len(m.ID) == 0:
		var n sessionNotification
		if json.Unmarshal(m.Params, &n) != nil {
			return // an update this client cannot read is skipped alone
		}
		c.mu.Lock()
		var evs []agentstream.Event
		if !c.loading {
			evs = c.turn.apply(&n.Update)
		}
		c.mu.Unlock()
		c.emit(evs)
	case m.Method == methodRequestPermission && len(m.ID) > 0:
		c.permission(m)
	case len(m.ID) > 0:
		// fs/*, terminal/* and anything else: not advertised, refused.
		_ = c.conn.reply(m.ID, nil, &RPCError{Code: codeMethodNotFound, Message: "method not found: " + m.Method + " (vibeteam does not offer it)"})
	}
}

// idKey is a request id as a map key.
func idKey(id json.RawMessage) string {
	if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	return string(id)
}

// clientVersion is the version told in clientInfo, which the schema
// requires (gemini --acp refuses an initialize without it): v, or the
// main module's version as the build recorded it, or "(devel)".
func clientVersion(v string) string {
	if v != "" {
		return v
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
