package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/gateway/api"
)

// relay carries one joined session's CHAT messages to the outbox.
type relay struct {
	session string
	it      jetstream.MessagesContext
	done    chan struct{}
}

// join leaves the current session and joins f.Session. It decides where the
// client resumes: right after its cursor when nothing after it has aged out
// of CHAT, else from a snapshot (sent before the reply) and its cursor. The
// returned start, called once the reply is queued, starts the relay so that
// no event frame precedes the reply.
func (c *conn) join(ctx context.Context, f events.ClientFrame) (start func(), _ api.Joined, _ error) {
	c.leave()
	subject, err := events.ChatSubject(c.p.TenantID, f.Session)
	if err != nil {
		return nil, api.Joined{}, invalid("session: %v", err)
	}
	from, fresh, err := c.resumeFrom(ctx, f)
	if err != nil {
		return nil, api.Joined{}, err
	}
	if !fresh {
		snap, err := c.h.d.Chats.Snapshot(ctx, c.p, f.Session)
		if err != nil {
			return nil, api.Joined{}, err
		}
		c.send(events.ServerFrame{Type: events.WSFrameSnapshot, Session: f.Session, Cursor: snap.Cursor,
			Reload: f.Cursor != nil, Payload: &snap}, "", 0)
		from = snap.Cursor + 1
	}
	cons, err := c.h.js.OrderedConsumer(ctx, events.StreamChat, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from,
		// The server removes it this long after the client stops reading
		// (leaves, disconnects), instead of the default five minutes.
		InactiveThreshold: 15 * time.Second,
	})
	if err != nil {
		return nil, api.Joined{}, streamErr(err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, api.Joined{}, streamErr(err)
	}
	r := &relay{session: f.Session, it: it, done: make(chan struct{})}
	c.joined = r
	c.session.Store(&r.session)
	return func() { go c.relay(ctx, r) }, api.Joined{Session: f.Session, From: from}, nil
}

// resumeFrom checks access and reports whether the client's cursor can be
// resumed from CHAT, and from which sequence. A cursor is fresh when every
// message after it is still stored (cursor+1 >= FirstSeq) and it is not
// beyond the stream's end (a cursor from a recreated stream).
func (c *conn) resumeFrom(ctx context.Context, f events.ClientFrame) (uint64, bool, error) {
	if f.Cursor == nil {
		return 0, false, nil // the snapshot checks access
	}
	if _, err := c.h.d.Chats.Session(ctx, c.p, f.Session); err != nil {
		return 0, false, err
	}
	s, err := c.h.js.Stream(ctx, events.StreamChat)
	if err != nil {
		return 0, false, streamErr(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, false, streamErr(err)
	}
	cur := *f.Cursor
	if cur+1 >= info.State.FirstSeq && cur <= info.State.LastSeq {
		return cur + 1, true, nil
	}
	return 0, false, nil
}

// relay forwards the joined session's events until the join ends. It waits
// for room in the outbox up to SlowGrace, so a replay goes at the client's
// pace; a client that stays behind trips the outbox.
func (c *conn) relay(ctx context.Context, r *relay) {
	defer close(r.done)
	for {
		msg, err := r.it.Next()
		if err != nil {
			if !errors.Is(err, jetstream.ErrMsgIteratorClosed) && ctx.Err() == nil {
				c.h.d.Logger.Error("relay chat events", "tenant_id", c.p.TenantID, "session_id", r.session, "err", err)
				c.out.trip("event stream failed: " + err.Error())
			}
			return
		}
		md, err := msg.Metadata()
		if err != nil {
			continue // not a JetStream message; cannot happen on a consumer
		}
		cursor := md.Sequence.Stream
		data, ok := eventFrame(r.session, cursor, msg.Data())
		if !ok {
			c.h.d.Logger.Error("skip unreadable chat event", "session_id", r.session, "cursor", cursor)
			continue
		}
		if !c.out.offerWait(ctx, outItem{data: data, session: r.session, cursor: cursor}, c.h.cfg.SlowGrace) {
			return
		}
	}
}

// leave stops the current join, if any, and waits for its relay (which
// dispatch starts right after a successful join's reply).
func (c *conn) leave() {
	r := c.joined
	if r == nil {
		return
	}
	c.joined = nil
	c.session.Store(new(string))
	r.it.Stop()
	<-r.done
}

func streamErr(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return svc.Unavailable("the %s stream does not exist yet: is streammgr running?", events.StreamChat)
	}
	return fmt.Errorf("chat stream: %w", err)
}
