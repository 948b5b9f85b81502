package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// maxFrame bounds what the client reads in one frame (snapshots can be big).
const maxFrame = 256 << 20

// ErrClosed is returned by calls on a connection that has ended; Err says
// why it ended.
var ErrClosed = errors.New("websocket closed")

// Conn is a WebSocket connection to the gateway. Calls (Join, Send, ...)
// may be made from any goroutine; each is given a fresh frame id and waits
// for its reply. Event, snapshot and bye frames arrive on Frames, which the
// caller must keep draining: the connection reads nothing while Frames is
// full, and the server disconnects a client that falls behind.
type Conn struct {
	ws     *websocket.Conn
	frames chan events.ServerFrame
	cancel context.CancelFunc
	done   chan struct{}
	nextID atomic.Uint64

	mu      sync.Mutex
	pending map[string]chan events.ServerFrame
	err     error
}

// Dial opens a WebSocket to the gateway. The connection lives until Close
// or until the server ends it, not until ctx ends.
func (c *Client) Dial(ctx context.Context) (*Conn, error) {
	ws, resp, err := websocket.Dial(ctx, c.base+"/v1/ws", &websocket.DialOptions{
		HTTPClient: c.HTTP,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.key}},
	})
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			return nil, &events.APIError{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: err.Error()}
		}
		return nil, fmt.Errorf("dial websocket: %w", err)
	}
	ws.SetReadLimit(maxFrame)
	rctx, cancel := context.WithCancel(context.Background())
	cn := &Conn{ws: ws, frames: make(chan events.ServerFrame, 1024), cancel: cancel, done: make(chan struct{}),
		pending: map[string]chan events.ServerFrame{}}
	go cn.read(rctx)
	return cn, nil
}

// Frames delivers event, snapshot and bye frames in the order the server
// sent them. It is closed when the connection ends.
func (cn *Conn) Frames() <-chan events.ServerFrame { return cn.frames }

// Done is closed when the connection has ended.
func (cn *Conn) Done() <-chan struct{} { return cn.done }

// Err returns why the connection ended, or nil while it is open.
func (cn *Conn) Err() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}

// Close closes the connection and waits for its reader.
func (cn *Conn) Close() error {
	err := cn.ws.Close(websocket.StatusNormalClosure, "")
	cn.cancel()
	<-cn.done
	return err
}

func (cn *Conn) read(ctx context.Context) {
	defer close(cn.done)
	defer close(cn.frames)
	for {
		_, data, err := cn.ws.Read(ctx)
		if err != nil {
			cn.fail(err)
			return
		}
		var f events.ServerFrame
		if err := json.Unmarshal(data, &f); err != nil {
			cn.fail(fmt.Errorf("decode server frame: %w", err))
			_ = cn.ws.CloseNow()
			return
		}
		if f.Type == events.WSFrameReply {
			cn.mu.Lock()
			ch := cn.pending[f.ID]
			delete(cn.pending, f.ID)
			cn.mu.Unlock()
			if ch != nil {
				ch <- f
			}
			continue
		}
		select {
		case cn.frames <- f:
		case <-ctx.Done():
			cn.fail(ctx.Err())
			return
		}
	}
}

// fail records why the connection ended and releases every waiting call.
func (cn *Conn) fail(err error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err == nil {
		cn.err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	for id, ch := range cn.pending {
		close(ch)
		delete(cn.pending, id)
	}
}

// Call sends f with a fresh id and waits for its reply; a reply with ok
// false is returned as *events.APIError. Most callers use the typed methods.
func (cn *Conn) Call(ctx context.Context, f events.ClientFrame) (json.RawMessage, error) {
	f.ID = strconv.FormatUint(cn.nextID.Add(1), 10)
	ch := make(chan events.ServerFrame, 1)
	cn.mu.Lock()
	if cn.err != nil {
		err := cn.err
		cn.mu.Unlock()
		return nil, err
	}
	cn.pending[f.ID] = ch
	cn.mu.Unlock()
	forget := func() {
		cn.mu.Lock()
		delete(cn.pending, f.ID)
		cn.mu.Unlock()
	}
	data, err := json.Marshal(f)
	if err != nil {
		forget()
		return nil, fmt.Errorf("encode %s frame: %w", f.Op, err)
	}
	if err := cn.ws.Write(ctx, websocket.MessageText, data); err != nil {
		forget()
		return nil, fmt.Errorf("send %s frame: %w", f.Op, err)
	}
	select {
	case r, ok := <-ch:
		switch {
		case !ok:
			return nil, cn.Err()
		case r.OK == nil || !*r.OK:
			if r.Error == nil {
				r.Error = &events.APIError{Code: "internal", Message: "reply without ok or error"}
			}
			return nil, r.Error
		}
		return r.Data, nil
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

// Join leaves any joined session and joins session: with a cursor, the
// frames after it are replayed; without one (or with one older than the
// server's buffer) a snapshot frame comes first. Event frames follow the
// reply.
func (cn *Conn) Join(ctx context.Context, session string, cursor *uint64) (api.Joined, error) {
	var j api.Joined
	data, err := cn.Call(ctx, events.ClientFrame{Op: events.WSOpJoin, Session: session, Cursor: cursor})
	if err == nil {
		err = json.Unmarshal(data, &j)
	}
	return j, err
}

// Leave stops receiving session's events.
func (cn *Conn) Leave(ctx context.Context, session string) error {
	_, err := cn.Call(ctx, events.ClientFrame{Op: events.WSOpLeave, Session: session})
	return err
}

// Send starts a turn in session, as SendMessage does over REST.
func (cn *Conn) Send(ctx context.Context, session string, m api.SendMessage) (events.StartTurnReply, error) {
	var r events.StartTurnReply
	f := events.ClientFrame{Op: events.WSOpSend, Session: session, Text: m.Text, Engine: m.Engine, Model: m.Model,
		Effort: m.Effort, ProfileID: m.ProfileID, RequestID: m.ClientRequestID}
	if len(m.Prompt) > 0 {
		raw, err := json.Marshal(m.Prompt)
		if err != nil {
			return r, fmt.Errorf("encode prompt: %w", err)
		}
		f.Prompt = raw
	}
	data, err := cn.Call(ctx, f)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	return r, err
}

// Cancel cancels a run of session (run empty: the active one).
func (cn *Conn) Cancel(ctx context.Context, session, run string) (json.RawMessage, error) {
	return cn.Call(ctx, events.ClientFrame{Op: events.WSOpCancel, Session: session, Run: run})
}

// Interrupt interrupts a run of session (run empty: the active one).
func (cn *Conn) Interrupt(ctx context.Context, session, run string) (json.RawMessage, error) {
	return cn.Call(ctx, events.ClientFrame{Op: events.WSOpInterrupt, Session: session, Run: run})
}

// Answer answers a parked question or permission prompt of session.
func (cn *Conn) Answer(ctx context.Context, session string, a api.Answer) (json.RawMessage, error) {
	return cn.Call(ctx, events.ClientFrame{Op: events.WSOpAnswer, Session: session, Run: a.RunID, ToolUseID: a.ToolUseID,
		Answers: a.Answers, Decision: a.Decision, Message: a.Message})
}

// AvailableSkills lists the "/" picker: for session (its project and, when
// profile is nil, its profile), or for project ("" for none) under profile
// (nil: the project's default). Give session or project, not both.
func (cn *Conn) AvailableSkills(ctx context.Context, session, project string, profile *string) ([]events.AvailableSkill, error) {
	var out []events.AvailableSkill
	data, err := cn.Call(ctx, events.ClientFrame{Op: events.WSOpSkillsAvailable, Session: session, ProjectID: project, ProfileID: profile})
	if err == nil {
		err = json.Unmarshal(data, &out)
	}
	return out, err
}

// Ping asks the server for a reply, proving the connection works end to end.
func (cn *Conn) Ping(ctx context.Context) error {
	_, err := cn.Call(ctx, events.ClientFrame{Op: events.WSOpPing})
	return err
}
