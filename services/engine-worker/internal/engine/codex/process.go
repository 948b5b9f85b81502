package codex

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
)

// errClosed fails the requests in flight when the app-server is gone.
var errClosed = errors.New("codex app-server closed its output")

// conn is one `codex app-server` process and its JSON-RPC session. Responses
// go to the request that waits for them; notifications and the server's
// requests pile up in an unbounded queue that the turn in progress drains.
type conn struct {
	*engine.Child
	queue *engine.Queue[Message]

	nextID atomic.Int64
	calls  engine.Calls[int64, Message]

	spec    string // how it was started: a warm one is reused only for the same
	started time.Time
}

// startConn starts argv in dir with env, confined by confine (nil: not at
// all). grace is how long the group gets between SIGTERM and SIGKILL.
func startConn(argv, env []string, dir string, grace time.Duration, tap func(bool, []byte), confine *engine.Confinement) (*conn, error) {
	c := &conn{queue: engine.NewQueue[Message](), started: time.Now()}
	child, err := engine.StartChild(engine.ChildSpec{Argv: argv, Env: env, Dir: dir, Grace: grace, Tap: tap,
		Line: c.route, Closed: c.queue.Close, Confine: confine})
	if err != nil {
		return nil, err
	}
	c.Child = child
	return c, nil
}

// route sends a stdout line to where it belongs: a response to its caller,
// the rest to the queue. Lines that are not JSON are dropped (codex logs to
// stderr).
func (c *conn) route(line []byte) {
	m, err := DecodeLine(line)
	switch {
	case err != nil:
	case m.IsResponse():
		c.deliver(m)
	default:
		c.queue.Push(m)
	}
}

func (c *conn) deliver(m Message) {
	if id, err := strconv.ParseInt(string(m.ID), 10, 64); err == nil {
		c.calls.Deliver(id, m)
	}
}

// call sends a request and waits for its response.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	m, err := c.calls.Call(ctx, id, c.Done(), errClosed, func() error {
		return c.Send(map[string]any{"id": id, "method": method, "params": params})
	})
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return c.Send(m)
}

// respond answers the server's request id.
func (c *conn) respond(id json.RawMessage, result any) error {
	return c.Send(map[string]any{"id": id, "result": result})
}

// refuse answers the server's request id with an error.
func (c *conn) refuse(id json.RawMessage, msg string) error {
	return c.Send(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": msg}})
}
