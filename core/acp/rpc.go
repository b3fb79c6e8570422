package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

// JSON-RPC error codes the client sends.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// message is any JSON-RPC 2.0 message: a request (ID and Method), a
// notification (Method alone) or a response (ID, and Result or Error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error, as the agent sent it.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	msg := e.Message
	if len(e.Data) > 0 && string(e.Data) != "null" {
		var s string
		if json.Unmarshal(e.Data, &s) == nil {
			msg += ": " + s
		} else {
			msg += ": " + string(e.Data)
		}
	}
	return msg
}

// ErrTooLong is the error of a connection that read a message too large
// to read even with its long strings cut (agentstream.Line's Lost): what
// it said is unknown, and the run cannot go on as if it had read it.
var ErrTooLong = errors.New("the agent sent a JSON-RPC message too large to read")

type tooLong struct{ n int64 }

func (e tooLong) Error() string {
	return fmt.Sprintf("%v (%d MB, more than %d MiB even with its long strings cut)", ErrTooLong, e.n>>20, agentstream.MaxLine>>20)
}

func (e tooLong) Unwrap() error { return ErrTooLong }

// conn is the JSON-RPC connection: calls wait for their response; the
// messages the agent sends are handed to the serving goroutine's handler
// one at a time, in order, so that a slow consumer slows the agent (its
// pipe fills) instead of losing messages or growing a queue.
type conn struct {
	w   io.Writer
	wmu sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	err     error // why the connection ended; nil while it reads
}

type response struct {
	result json.RawMessage
	err    error
}

func newConn(w io.Writer) *conn {
	return &conn{w: w, pending: map[int64]chan response{}}
}

// write sends one message, as one line.
func (c *conn) write(m message) error {
	m.JSONRPC = "2.0"
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(data)
	return err
}

// start sends a request and returns the channel its response comes on.
func (c *conn) start(method string, params any) (int64, <-chan response, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return 0, nil, err
	}
	c.mu.Lock()
	if c.err != nil {
		defer c.mu.Unlock()
		return 0, nil, c.err
	}
	c.nextID++
	id := c.nextID
	ch := make(chan response, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(message{ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw}); err != nil {
		c.forget(id)
		return 0, nil, fmt.Errorf("%s: writing to the agent: %w", method, err)
	}
	return id, ch, nil
}

func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.write(message{Method: method, Params: raw})
}

// reply answers a request of the agent's.
func (c *conn) reply(id json.RawMessage, result any, rpcErr *RPCError) error {
	m := message{ID: id, Error: rpcErr}
	if rpcErr == nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return err
		}
		m.Result = raw
	}
	return c.write(m)
}

// serve reads messages until the stream ends or fails, answering pending
// calls and handing requests and notifications to handle. Every call
// still waiting then gets the error the connection ended with.
func (c *conn) serve(r io.Reader, handle func(m *message)) error {
	// Lines of any length, in bounded memory: a longer one than
	// agentstream.MaxLine comes with its long strings cut (a tool's whole
	// output), and only one too large even so is lost, which ends the
	// connection.
	lines := agentstream.NewLineReader(r)
	var end error
	for {
		ln, err := lines.Next()
		if err != nil {
			end = err
			break
		}
		if ln.Lost {
			end = tooLong{ln.Len}
			break
		}
		line := ln.Text
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m message
		if json.Unmarshal(line, &m) != nil {
			continue // not JSON-RPC (a stray print): ignored, as the protocol's clients do
		}
		if m.Method == "" {
			c.answer(&m)
			continue
		}
		handle(&m)
	}
	if errors.Is(end, io.EOF) {
		end = errAgentGone
	}
	c.mu.Lock()
	c.err = end
	waiting := c.pending
	c.pending = map[int64]chan response{}
	c.mu.Unlock()
	for _, ch := range waiting {
		ch <- response{err: end}
	}
	return end
}

// errAgentGone: the agent's stdout ended (it exited, or closed it).
var errAgentGone = errors.New("the agent ended the connection (its output closed)")

func (c *conn) answer(m *message) {
	id, err := strconv.ParseInt(string(bytes.TrimSpace(m.ID)), 10, 64)
	if err != nil {
		return // not an id this client gave
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		return
	}
	if m.Error != nil {
		ch <- response{err: m.Error}
		return
	}
	ch <- response{result: m.Result}
}
