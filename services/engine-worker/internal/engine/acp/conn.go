package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"clopen.dev/services/engine-worker/internal/engine"
)

// conn is the client side of a JSON-RPC 2.0 connection over newline-
// delimited stdio. One goroutine reads: responses to Call go straight to
// their caller; everything else (the agent's requests and notifications,
// and responses to Start) queues in order in an unbounded inbox, which the
// turn in progress drains. Writes are serialized; conn is safe for
// concurrent use.
type conn struct {
	out lineWriter
	bad func(line []byte, err error) // a line that is not JSON-RPC

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[string]*pendingCall

	inbox  *engine.Queue[Frame]
	closed chan struct{} // closed when the agent is gone and its stdout drained
}

// lineWriter is the agent's stdin: *engine.Child.
type lineWriter interface {
	Send(v any) error
	CloseInput()
}

type pendingCall struct {
	ch      chan Frame // Call: the response
	ordered bool       // Start: the response goes to the inbox, in order
}

func newConn(bad func([]byte, error)) *conn {
	return &conn{bad: bad, pending: map[string]*pendingCall{}, inbox: engine.NewQueue[Frame](), closed: make(chan struct{})}
}

// eof ends the connection: calls in flight fail, the inbox closes.
func (c *conn) eof() {
	close(c.closed)
	c.inbox.Close()
}

// dispatch routes one line of the agent's stdout: a response to its Call,
// everything else to the inbox.
func (c *conn) dispatch(line []byte) {
	f, err := DecodeFrame(line)
	if err != nil {
		if c.bad != nil {
			c.bad(line, err)
		}
		return
	}
	if f.Kind() == KindResponse {
		key := idKey(f.ID)
		c.mu.Lock()
		p := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		switch {
		case p == nil:
			if c.bad != nil {
				c.bad(line, fmt.Errorf("response to unknown id %s", f.ID))
			}
		case p.ordered:
			c.inbox.Push(f)
		default:
			p.ch <- f // buffered: never blocks
		}
		return
	}
	c.inbox.Push(f)
}

// send writes one frame.
func (c *conn) send(f Frame) error {
	f.JSONRPC = "2.0"
	return c.out.Send(f)
}

// errClosed is returned for calls on a connection whose agent is gone.
var errClosed = errors.New("the agent closed its output")

func (c *conn) register(ordered bool) (json.RawMessage, *pendingCall) {
	id := json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10))
	p := &pendingCall{ch: make(chan Frame, 1), ordered: ordered}
	c.mu.Lock()
	c.pending[string(id)] = p
	c.mu.Unlock()
	return id, p
}

func (c *conn) forget(id json.RawMessage) {
	c.mu.Lock()
	delete(c.pending, string(id))
	c.mu.Unlock()
}

// Call sends a request and waits for its response, decoding the result
// into out (when not nil). A JSON-RPC error comes back as *RPCError.
func (c *conn) Call(ctx context.Context, method string, params, out any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	id, p := c.register(false)
	if err := c.send(Frame{ID: id, Method: method, Params: raw}); err != nil {
		c.forget(id)
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case f := <-p.ch:
		if f.Error != nil {
			return f.Error
		}
		if out != nil && len(f.Result) > 0 && string(f.Result) != "null" {
			if err := json.Unmarshal(f.Result, out); err != nil {
				return fmt.Errorf("%s: decode result: %w", method, err)
			}
		}
		return nil
	case <-c.closed:
		return fmt.Errorf("%s: %w", method, errClosed)
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
}

// Start sends a request whose response arrives in the inbox, after every
// notification the agent sent before it. It returns the request's id.
func (c *conn) Start(method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id, _ := c.register(true)
	if err := c.send(Frame{ID: id, Method: method, Params: raw}); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return id, nil
}

// Notify sends a notification.
func (c *conn) Notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.send(Frame{Method: method, Params: raw})
}

// Reply answers the agent's request id with result.
func (c *conn) Reply(id json.RawMessage, result any) error {
	raw, err := json.Marshal(result)
	if err != nil {
		return err
	}
	if string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	return c.send(Frame{ID: id, Result: raw})
}

// ReplyError answers the agent's request id with an error.
func (c *conn) ReplyError(id json.RawMessage, code int, msg string) error {
	return c.send(Frame{ID: id, Error: &RPCError{Code: code, Message: msg}})
}
