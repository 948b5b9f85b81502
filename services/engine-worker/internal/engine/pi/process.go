package pi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// errClosed fails the commands in flight when pi is gone.
var errClosed = errors.New("pi closed its output")

// conn is one `pi --mode rpc` process. Responses go to the command that
// waits for them (by id); events and extension UI requests pile up in an
// unbounded queue that the turn in progress drains.
type conn struct {
	*engine.RPC[string, Event]

	spec    string // how it was started: a warm one is reused only for the same
	started time.Time
	session string             // the session pi is on after a turn ("" while fresh)
	fresh   bool               // no turn has run: pi is on the empty session it started with
	mcp     []events.MCPServer // how the extension fared with the MCP servers
}

// wire is pi's RPC mode: a response names the command's id. Lines that
// are not JSON are dropped.
var wire = engine.RPCWire[string, Event]{Decode: DecodeLine, Closed: errClosed,
	Response: func(ev Event) (string, bool) { return ev.ID, ev.Type == "response" && ev.ID != "" }}

// startConn starts argv in dir with env, confined by confine (nil: not at
// all). grace is how long the group gets between SIGTERM and SIGKILL.
func startConn(argv, env []string, dir string, grace time.Duration, tap func(bool, []byte), confine *engine.Confinement) (*conn, error) {
	rpc, err := engine.StartRPC(engine.ChildSpec{Argv: argv, Env: env, Dir: dir, Grace: grace, Tap: tap, Confine: confine}, wire)
	if err != nil {
		return nil, err
	}
	return &conn{RPC: rpc, started: time.Now(), fresh: true}, nil
}

// call sends a command and waits for its response; a response with
// success false is an error.
func (c *conn) call(ctx context.Context, command map[string]any) (json.RawMessage, error) {
	id := "c" + strconv.FormatInt(c.NextID(), 10)
	command["id"] = id
	ev, err := c.Call(ctx, id, func() error { return c.Send(command) })
	if err != nil {
		return nil, err
	}
	if ev.Success != nil && !*ev.Success {
		return nil, commandError(ev.Command, cmp.Or(ev.Error, "refused"))
	}
	return ev.Data, nil
}

// uiRespond answers an extension UI dialog.
func (c *conn) uiRespond(id string, fields map[string]any) error {
	fields["type"], fields["id"] = "extension_ui_response", id
	return c.Send(fields)
}
