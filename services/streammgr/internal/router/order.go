package router

import (
	"time"

	"clopen.dev/pkg/events"
)

// Held is an envelope waiting for an earlier one of its run, with whatever
// the caller needs to finish it (typically the bus message to ack).
type Held struct {
	Env   events.Envelope
	Token any
}

// Orderer puts a run's envelopes back in seq order. Events normally arrive in
// order; after a streammgr restart, older unacknowledged events are
// redelivered after newer ones, and a publish retry can swap two neighbours.
// Routing out of order would lose partial text and chat events, so an
// envelope after a gap waits until the gap is filled, or until GapTimeout
// passes (the missing event is never coming: route what there is).
type Orderer struct {
	held     map[uint64]Held // by seq, for the current epoch
	epoch    uint64
	gapSince time.Time
	authored []Held // streammgr's own events, routed after everything held
}

// GapTimeout is how long an envelope waits for a missing predecessor.
const GapTimeout = 30 * time.Second

// Offer takes one envelope and returns, in order, those now ready to route.
// last is the highest seq already routed in epoch lastEpoch.
func (o *Orderer) Offer(h Held, lastEpoch, last uint64, now time.Time) []Held {
	env := h.Env
	switch {
	case env.Seq == 0: // streammgr's own: after anything in flight
		o.authored = append(o.authored, h)
	case env.Epoch < lastEpoch || (env.Epoch == lastEpoch && env.Seq <= last):
		return []Held{h} // stale or already routed: the router decides what to do
	case env.Epoch > o.epoch:
		// A new owner: whatever the old epoch still held is routed first.
		ready := o.drain()
		o.epoch = env.Epoch
		o.put(h)
		if env.Epoch > lastEpoch {
			last = 0
		}
		return append(ready, o.ready(last, now)...)
	default:
		o.put(h)
	}
	if env.Epoch > lastEpoch {
		last = 0
	}
	return o.ready(last, now)
}

// Expire routes what has waited past GapTimeout.
func (o *Orderer) Expire(now time.Time) []Held {
	if len(o.held) > 0 && !o.gapSince.IsZero() && now.Sub(o.gapSince) > GapTimeout {
		return o.drain()
	}
	return nil
}

// Pending reports whether envelopes are waiting.
func (o *Orderer) Pending() bool { return len(o.held) > 0 || len(o.authored) > 0 }

func (o *Orderer) put(h Held) {
	if o.held == nil {
		o.held = map[uint64]Held{}
	}
	if h.Env.Epoch > o.epoch {
		o.epoch = h.Env.Epoch
	}
	if prev, dup := o.held[h.Env.Seq]; dup {
		// A redelivery of one we hold: keep one, route the other as a repeat.
		o.authored = append(o.authored, Held{Env: prev.Env, Token: prev.Token})
	}
	o.held[h.Env.Seq] = h
}

func (o *Orderer) ready(last uint64, now time.Time) []Held {
	var out []Held
	for {
		h, ok := o.held[last+1]
		if !ok {
			break
		}
		delete(o.held, last+1)
		out = append(out, h)
		last++
	}
	if len(o.held) == 0 {
		o.gapSince = time.Time{}
		out = append(out, o.authored...)
		o.authored = nil
	} else if o.gapSince.IsZero() {
		o.gapSince = now
	}
	return out
}

// drain returns everything held, in seq order, then streammgr's own events.
func (o *Orderer) drain() []Held {
	var out []Held
	for len(o.held) > 0 {
		lowest := ^uint64(0)
		for s := range o.held {
			lowest = min(lowest, s)
		}
		out = append(out, o.held[lowest])
		delete(o.held, lowest)
	}
	o.gapSince = time.Time{}
	out = append(out, o.authored...)
	o.authored = nil
	return out
}
