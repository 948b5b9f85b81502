package streammgr

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
)

// chatPublisher publishes chat events to CHAT in order per session.
//
// Order on a session's subject is what clients rebuild text from, so a
// publication that fails must be stored before anything queued after it.
// Publications pipelined without limit would break that: a leader election
// could fail event k, let k+1 through on the new leader, and store k's retry
// after it (the Msg-Id then keeps k+1 where it is). So each session sends in
// bursts: everything queued goes out at once, and the next burst waits until
// every publication of this one is acknowledged or retried. Within a burst
// the messages travel one connection back to back, so a broker failure fails
// the tail of the burst together; sessions publish concurrently, each from
// a sender goroutine the publisher owns: wait joins them.
type chatPublisher struct {
	js  jetstream.JetStream
	log *slog.Logger
	wg  sync.WaitGroup // the senders

	mu       sync.Mutex
	sessions map[string][]*chatPub // queued per session; present while its sender runs
}

// chatPub is one chat event on its way to CHAT.
type chatPub struct {
	msg  *nats.Msg
	done chan struct{}
	seq  uint64 // the CHAT sequence once done; 0 if it was never stored
}

const (
	chatPublishTimeout = 5 * time.Second
	chatPublishRetries = 20 // with backoff to 2 s: ~40 s, longer than a leader election or a broker restart
)

func newChatPublisher(js jetstream.JetStream, log *slog.Logger) *chatPublisher {
	return &chatPublisher{js: js, log: log, sessions: map[string][]*chatPub{}}
}

// publish queues msgs (all on session's subject) behind the session's earlier
// chat events and returns their handles.
func (c *chatPublisher) publish(ctx context.Context, session string, msgs []*nats.Msg) []*chatPub {
	if len(msgs) == 0 {
		return nil
	}
	pubs := make([]*chatPub, len(msgs))
	for i, m := range msgs {
		pubs[i] = &chatPub{msg: m, done: make(chan struct{})}
	}
	c.mu.Lock()
	q, running := c.sessions[session]
	c.sessions[session] = append(q, pubs...)
	c.mu.Unlock()
	if !running {
		c.wg.Go(func() { c.send(ctx, session) })
	}
	return pubs
}

// wait returns once every sender has. Call it when nothing publishes any
// more and the senders' ctx has ended (they then stop retrying, closing
// every handle not yet stored with sequence 0).
func (c *chatPublisher) wait() { c.wg.Wait() }

// send publishes the session's queue, a burst at a time, until it is empty.
func (c *chatPublisher) send(ctx context.Context, session string) {
	for {
		c.mu.Lock()
		q := c.sessions[session]
		if len(q) == 0 {
			delete(c.sessions, session)
			c.mu.Unlock()
			return
		}
		burst := q[:min(len(q), maxChatBurst)]
		c.sessions[session] = q[len(burst):]
		c.mu.Unlock()
		c.burst(ctx, burst)
	}
}

const maxChatBurst = 256

// burst publishes pubs pipelined and waits for every acknowledgement; what
// failed is published again, in order, before burst returns.
func (c *chatPublisher) burst(ctx context.Context, pubs []*chatPub) {
	futs := make([]jetstream.PubAckFuture, len(pubs))
	for i, p := range pubs {
		// No client-side retries: a retry of k landing after k+1 is the
		// reordering this type exists to prevent.
		f, err := c.js.PublishMsgAsync(p.msg, jetstream.WithRetryAttempts(0))
		if err != nil {
			break // the rest go one by one below
		}
		futs[i] = f
	}
	timeout := time.NewTimer(chatPublishTimeout)
	defer timeout.Stop()
	failed := false
	for i, p := range pubs {
		if f := futs[i]; f != nil && !failed {
			select {
			case ack := <-f.Ok():
				p.seq = ack.Sequence
			case <-f.Err():
			case <-timeout.C:
			case <-ctx.Done():
			}
		}
		if p.seq == 0 {
			// Stored after all (a lost ack) or not at all: the retry, under
			// the same Msg-Id, says which. Everything after it is retried
			// too, so nothing overtakes it.
			failed = true
			p.seq = c.store(ctx, p.msg)
		}
		close(p.done)
	}
}

// store publishes msg, retrying under the same Msg-Id (a publication that
// was stored after all is acknowledged as a duplicate, at its first place).
func (c *chatPublisher) store(ctx context.Context, msg *nats.Msg) uint64 {
	delay := 100 * time.Millisecond
	var err error
	for attempt := 0; attempt < chatPublishRetries && ctx.Err() == nil; attempt++ {
		actx, cancel := context.WithTimeout(ctx, chatPublishTimeout)
		var ack *jetstream.PubAck
		ack, err = c.js.PublishMsg(actx, msg)
		cancel()
		if err == nil {
			return ack.Sequence
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
		delay = min(2*delay, 2*time.Second)
	}
	c.log.Error("chat event not stored; clients will get it only from a snapshot",
		"subject", msg.Subject, "msg_id", msg.Header.Get(events.HeaderMsgID), "err", err)
	return 0
}

// wait returns p's CHAT sequence once it is stored, 0 if it never was.
func (p *chatPub) wait(ctx context.Context) uint64 {
	select {
	case <-p.done:
		return p.seq
	case <-ctx.Done():
		return 0
	}
}
