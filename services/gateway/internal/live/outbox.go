package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// outItem is one encoded server frame waiting to be written. Event frames of
// the joined session carry their session and CHAT cursor, so the writer
// knows the last cursor it delivered.
type outItem struct {
	data    []byte
	session string
	cursor  uint64
}

// outbox is a connection's bounded outbound queue. Producers never block
// for long: when the queue stays full, the outbox trips, the writer says
// bye with the last delivered cursor and the connection closes. Memory per
// connection is therefore bounded by the queue's capacity.
type outbox struct {
	q        chan outItem
	tripped  chan struct{}
	once     sync.Once
	reason   string // set once, before tripped is closed
	maxDepth *atomic.Int64
	slow     *atomic.Int64 // counts trips for falling behind
}

func newOutbox(size int, maxDepth, slow *atomic.Int64) *outbox {
	return &outbox{q: make(chan outItem, size), tripped: make(chan struct{}), maxDepth: maxDepth, slow: slow}
}

// offer queues it without waiting; a full queue trips the outbox.
func (o *outbox) offer(it outItem) bool {
	select {
	case o.q <- it:
		o.noteDepth()
		return true
	case <-o.tripped:
		return false
	default:
		o.trip(reasonSlow)
		return false
	}
}

// offerWait queues it, waiting up to grace for room: the relay of stored and
// live events paces itself to the client this way, and only a client that
// stays behind for grace is cut off.
func (o *outbox) offerWait(ctx context.Context, it outItem, grace time.Duration) bool {
	select {
	case o.q <- it:
		o.noteDepth()
		return true
	case <-o.tripped:
		return false
	default:
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case o.q <- it:
		o.noteDepth()
		return true
	case <-o.tripped:
		return false
	case <-ctx.Done():
		return false
	case <-t.C:
		o.trip(reasonSlow)
		return false
	}
}

// trip ends the connection with a bye giving reason; the first reason wins.
func (o *outbox) trip(reason string) {
	o.once.Do(func() {
		if reason == reasonSlow {
			o.slow.Add(1)
		}
		o.reason = reason
		close(o.tripped)
	})
}

func (o *outbox) noteDepth() {
	d := int64(len(o.q))
	for {
		cur := o.maxDepth.Load()
		if d <= cur || o.maxDepth.CompareAndSwap(cur, d) {
			return
		}
	}
}
