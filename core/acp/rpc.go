package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// MaxMessage bounds one JSON-RPC message (one line). A message is never
// skipped (it may be the answer a call waits for), so a longer one ends the
// connection with an error that names the limit.
const MaxMessage = 16 << 20

// keepBuffer is the largest line buffer kept for the next line: a rare
// big message does not hold its memory for the rest of the run.
const keepBuffer = 1 << 20

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

// ErrTooLong is the error of a connection that read a message over its
// bound (MaxMessage); its text names the bound.
var ErrTooLong = errors.New("the agent sent a message longer than vibeteam reads (one JSON-RPC line)")

type tooLong struct{ max int }

func (e tooLong) Error() string {
	return fmt.Sprintf("%v: over %s, not read", ErrTooLong, sizeText(e.max))
}

func (e tooLong) Unwrap() error { return ErrTooLong }

func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// lineReader reads lines of at most max bytes, in a buffer it reuses.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline; the slice is valid
// until the next call. io.EOF at the end of the stream.
func (l *lineReader) next() ([]byte, error) {
	if cap(l.buf) > keepBuffer {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(l.buf)+len(chunk) > l.max+1 {
			return nil, tooLong{l.max}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			l.buf = append(l.buf, chunk...)
			continue
		case err != nil && (!errors.Is(err, io.EOF) || len(l.buf)+len(chunk) == 0):
			return nil, err
		}
		line := chunk
		if len(l.buf) > 0 {
			l.buf = append(l.buf, chunk...)
			line = l.buf
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

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
func (c *conn) serve(r io.Reader, max int, handle func(m *message)) error {
	lines := newLineReader(r, max)
	var end error
	for {
		line, err := lines.next()
		if err != nil {
			end = err
			break
		}
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
