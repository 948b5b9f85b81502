package codex

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
)

// errClosed fails the requests in flight when the app-server is gone.
var errClosed = errors.New("codex app-server closed its output")

// conn is one `codex app-server` process and its JSON-RPC session. Responses
// go to the request that waits for them; notifications and the server's
// requests pile up in an unbounded queue that the turn in progress drains.
type conn struct {
	*engine.RPC[int64, Message]

	spec    string // how it was started: a warm one is reused only for the same
	started time.Time
}

// wire is the app-server's JSON-RPC: responses by their numeric id. Lines
// that are not JSON are dropped (codex logs to stderr).
var wire = engine.RPCWire[int64, Message]{Decode: DecodeLine, Closed: errClosed,
	Response: func(m Message) (int64, bool) {
		if !m.IsResponse() {
			return 0, false
		}
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return -1, true // not an id of ours: nobody waits for it
		}
		return id, true
	}}

// startConn starts argv in dir with env, confined by confine (nil: not at
// all). grace is how long the group gets between SIGTERM and SIGKILL.
func startConn(argv, env []string, dir string, grace time.Duration, tap func(bool, []byte), confine *engine.Confinement) (*conn, error) {
	rpc, err := engine.StartRPC(engine.ChildSpec{Argv: argv, Env: env, Dir: dir, Grace: grace, Tap: tap, Confine: confine}, wire)
	if err != nil {
		return nil, err
	}
	return &conn{RPC: rpc, started: time.Now()}, nil
}

// call sends a request and waits for its response.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.NextID()
	m, err := c.Call(ctx, id, func() error {
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
