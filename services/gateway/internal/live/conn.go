package live

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Reasons a connection is told bye.
const (
	reasonSlow     = "slow consumer"
	reasonShutdown = "server shutting down"
)

// conn is one client connection. The read loop runs in ServeWS's goroutine
// and handles frames one at a time; it alone touches the join state. The
// writer, the pinger and the event relay are goroutines it waits for.
type conn struct {
	h      *Hub
	ws     *websocket.Conn
	p      identity.Principal
	out    *outbox
	cancel context.CancelFunc

	joined  *relay                 // the current join; read loop only
	session atomic.Pointer[string] // the joined session, for the notification filter
	subs    []*nats.Subscription
}

func newConn(h *Hub, ws *websocket.Conn, p identity.Principal) *conn {
	c := &conn{h: h, ws: ws, p: p, out: newOutbox(h.cfg.QueueSize, &h.maxDepth, &h.slow)}
	c.session.Store(new(string))
	return c
}

// serve runs the connection. It returns when the client goes, the outbox
// trips, or the hub closes.
func (c *conn) serve() {
	ctx, cancel := context.WithCancel(c.h.ctx)
	c.cancel = cancel
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { c.writeLoop(ctx) })
	wg.Go(func() { c.pingLoop(ctx) })
	wg.Go(func() {
		select {
		case <-c.h.stopping:
			c.out.trip(reasonShutdown)
		case <-ctx.Done():
		}
	})
	c.subscribeNotify(ctx)
	c.readLoop(ctx)
	cancel()
	c.leave()
	for _, s := range c.subs {
		_ = s.Unsubscribe()
	}
	wg.Wait()
	_ = c.ws.CloseNow()
}

// readLoop serves client frames until the socket fails or ctx ends.
func (c *conn) readLoop(ctx context.Context) {
	for {
		typ, r, err := c.ws.Reader(ctx)
		if err != nil {
			return
		}
		data, err := readFrame(r, c.h.cfg.ReadLimit)
		if err != nil && !errors.Is(err, apierr.ErrTooLarge) {
			return // the socket failed mid-frame, or the frame passed the hard limit
		}
		switch {
		case err != nil:
			c.reply("", nil, err)
			continue
		case typ != websocket.MessageText:
			c.reply("", nil, invalid("binary frames are not part of the protocol; send JSON text"))
			continue
		}
		f, err := DecodeClientFrame(data)
		if err == nil {
			err = c.h.d.Limiter.Allow(c.p.KeyID)
		}
		if err != nil {
			c.reply(f.ID, nil, err)
			continue
		}
		c.dispatch(ctx, f)
	}
}

// readFrame reads one frame of at most limit bytes. A larger one is read to
// its end and dropped, so the connection stays usable.
func readFrame(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, err
		}
		return nil, apierr.New(apierr.ErrTooLarge, "frame larger than %d bytes", limit)
	}
	return data, nil
}

// dispatch serves one well-formed frame and replies to it.
func (c *conn) dispatch(ctx context.Context, f events.ClientFrame) {
	switch f.Op {
	case events.WSOpPing:
		c.reply(f.ID, nil, nil)
	case events.WSOpJoin:
		start, data, err := c.join(ctx, f)
		c.reply(f.ID, data, err)
		if start != nil {
			start()
		}
	case events.WSOpLeave:
		if *c.session.Load() == f.Session {
			c.leave()
		}
		c.reply(f.ID, nil, nil)
	default:
		data, err := c.command(ctx, f)
		c.reply(f.ID, data, err)
	}
}

// reply queues the answer to frame id: ok with data, or the mapped error.
func (c *conn) reply(id string, data any, err error) {
	ok := err == nil
	f := events.ServerFrame{Type: events.WSFrameReply, ID: id, OK: &ok}
	if err != nil {
		e, classified := apierr.StatusFor(err)
		if !classified {
			c.h.d.Logger.Error("websocket op", "tenant_id", c.p.TenantID, "frame_id", id, "err", err)
		}
		f.Error = e
	} else if data != nil {
		raw, merr := json.Marshal(data)
		if merr != nil {
			c.reply(id, nil, merr)
			return
		}
		f.Data = raw
	}
	c.send(f, "", 0)
}

// send encodes and queues a frame without waiting.
func (c *conn) send(f events.ServerFrame, session string, cursor uint64) bool {
	data, err := json.Marshal(f)
	if err != nil {
		c.h.d.Logger.Error("encode websocket frame", "type", f.Type, "err", err)
		return true
	}
	return c.out.offer(outItem{data: data, session: session, cursor: cursor})
}

// writeLoop writes queued frames in order. When the outbox trips it sends
// bye with the last cursor delivered and closes the connection.
func (c *conn) writeLoop(ctx context.Context) {
	var last outItem
	for {
		// A tripped outbox wins over frames still queued: they would only be
		// dropped by the client's reconnect anyway.
		select {
		case <-c.out.tripped:
			c.bye(ctx, c.out.reason, last)
			return
		default:
		}
		select {
		case <-ctx.Done():
			return
		case <-c.out.tripped:
			c.bye(ctx, c.out.reason, last)
			return
		case it := <-c.out.q:
			wctx, cancel := context.WithTimeout(ctx, c.h.cfg.WriteTimeout)
			err := c.ws.Write(wctx, websocket.MessageText, it.data)
			cancel()
			if err != nil {
				c.cancel()
				return
			}
			if it.cursor > 0 {
				last = it
			}
		}
	}
}

// bye tells the client why it is being disconnected and where to resume.
func (c *conn) bye(ctx context.Context, reason string, last outItem) {
	data, _ := json.Marshal(events.ServerFrame{Type: events.WSFrameBye, Reason: reason, Session: last.session, Cursor: last.cursor})
	wctx, cancel := context.WithTimeout(ctx, c.h.cfg.WriteTimeout)
	defer cancel()
	if c.ws.Write(wctx, websocket.MessageText, data) == nil {
		_ = c.ws.Close(websocket.StatusPolicyViolation, reason)
	}
	c.cancel()
}

// pingLoop pings the client; one that does not answer in time is gone.
func (c *conn) pingLoop(ctx context.Context) {
	t := time.NewTicker(c.h.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, c.h.cfg.PingInterval)
			err := c.ws.Ping(pctx)
			cancel()
			if err != nil {
				c.cancel()
				return
			}
		}
	}
}
