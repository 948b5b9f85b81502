package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
)

// ErrFenced is returned by emit once the run lost its lease: another owner (or
// the reaper) has taken over and nothing more may be published.
var ErrFenced = errors.New("run lease lost: publishing stopped")

// errPublisherClosed is returned by emit after the terminal event.
var errPublisherClosed = errors.New("run already ended")

// publisher publishes one run's outputs in order on ev.<tenant>.<run>, each
// stamped (run, epoch, seq) with Nats-Msg-Id run:epoch:seq, asynchronously
// with the acknowledgements tracked, coalescing consecutive text deltas.
//
// Coalescing is Nagle-like: a delta after a quiet period is published at
// once; deltas that follow within window are merged and published when the
// window since the last delta publication ends, or at once when anything
// else (a type change) arrives. The latency cost is bounded by window; at
// high rates many deltas travel as one event.
type publisher struct {
	js      jetstream.JetStream
	subject string
	base    events.Envelope // tenant, run, session, epoch, traceparent
	window  time.Duration
	fenced  *atomic.Bool

	// gate orders emits against close: senders hold it shared while they
	// queue, close takes it exclusively to mark the publisher closed, so
	// nothing is queued (or sent on a closed channel) after that.
	gate   sync.RWMutex
	closed bool

	in   chan pubItem
	done chan struct{}
	dead chan struct{} // closed if the loop gives up
	err  error         // why it gave up; read after dead

	seq       uint64
	pending   *events.StreamEvent
	lastDelta time.Time
	inflight  []inflight
	published bool
	// onPublish observes each publication (first: the run's first non-state
	// output, for time to first output); set before the first emit.
	onPublish func(o events.Output, first bool)
}

type pubItem struct {
	out   events.Output
	flush chan error // non-nil: publish everything pending, wait for acks, reply
}

type inflight struct {
	msg     *nats.Msg
	fut     jetstream.PubAckFuture
	retries int
}

const (
	maxDeltaBytes = 32 << 10         // a coalesced delta is published once it reaches this size
	ackTimeout    = 60 * time.Second // a leader election or broker restart takes seconds
	maxRetries    = 20
)

func newPublisher(js jetstream.JetStream, base events.Envelope, window time.Duration, fenced *atomic.Bool) (*publisher, error) {
	subject, err := events.EventsSubject(base.Tenant, base.Run)
	if err != nil {
		return nil, err
	}
	p := &publisher{js: js, subject: subject, base: base, window: window, fenced: fenced,
		in: make(chan pubItem, 256), done: make(chan struct{}), dead: make(chan struct{})}
	go p.loop()
	return p, nil
}

// emit queues o for publication. It blocks while the queue is full.
func (p *publisher) emit(o events.Output) error {
	if p.fenced.Load() {
		return ErrFenced
	}
	p.gate.RLock()
	defer p.gate.RUnlock()
	if p.closed {
		return errPublisherClosed
	}
	select {
	case p.in <- pubItem{out: o}:
		return nil
	case <-p.dead:
		return p.err
	case <-p.done:
		return errPublisherClosed
	}
}

// sync asks the loop to publish everything queued and waits for the acks.
func (p *publisher) sync(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case p.in <- pubItem{flush: reply}:
	case <-p.dead:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close flushes and stops the loop. No emit succeeds afterwards; an adapter
// goroutine still emitting gets errPublisherClosed.
func (p *publisher) close(ctx context.Context) error {
	p.gate.Lock()
	if p.closed {
		p.gate.Unlock()
		return errPublisherClosed
	}
	p.closed = true
	p.gate.Unlock()
	err := p.sync(ctx)
	close(p.in)
	select {
	case <-p.done:
	case <-p.dead:
	case <-ctx.Done():
	}
	return err
}

func (p *publisher) loop() {
	defer close(p.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	fail := func(err error) {
		p.err = err
		close(p.dead)
	}
	for {
		select {
		case it, ok := <-p.in:
			if !ok {
				return
			}
			if it.flush != nil {
				err := p.publishPending()
				if err == nil {
					err = p.waitAcks()
				}
				it.flush <- err
				if err != nil {
					fail(err)
					return
				}
				continue
			}
			if err := p.accept(it.out, timer); err != nil {
				fail(err)
				return
			}
		case <-timer.C:
			if err := p.publishPending(); err != nil {
				fail(err)
				return
			}
		}
	}
}

// accept publishes o, or merges it into the pending delta.
func (p *publisher) accept(o events.Output, timer *time.Timer) error {
	d, ok := o.(events.StreamEvent)
	if !ok || d.Event != events.StreamDelta {
		if err := p.publishPending(); err != nil {
			return err
		}
		return p.publish(o)
	}
	if p.pending != nil && (p.pending.Reasoning != d.Reasoning || p.pending.SessionID != d.SessionID) {
		if err := p.publishPending(); err != nil {
			return err
		}
	}
	if p.pending == nil {
		cp := d
		p.pending = &cp
	} else {
		p.pending.Text += d.Text
	}
	wait := p.window - time.Since(p.lastDelta)
	if wait <= 0 || len(p.pending.Text) >= maxDeltaBytes {
		return p.publishPending()
	}
	timer.Reset(wait)
	return nil
}

func (p *publisher) publishPending() error {
	if p.pending == nil {
		return nil
	}
	d := p.pending
	p.pending = nil
	p.lastDelta = time.Now()
	return p.publish(*d)
}

func (p *publisher) publish(o events.Output) error {
	if p.fenced.Load() {
		return ErrFenced
	}
	p.seq++
	env := p.base
	env.Seq = p.seq
	env.EmittedAt = time.Now().UTC()
	env.Output = o
	data, err := env.MarshalJSON() // not json.Marshal: it would re-compact the encoded output
	if err != nil {
		return fmt.Errorf("encode %s event %d: %w", o.OutputType(), p.seq, err)
	}
	msg := nats.NewMsg(p.subject)
	msg.Data = data
	msg.Header.Set(events.HeaderMsgID, env.MsgID())
	msg.Header.Set(events.HeaderRun, env.Run)
	msg.Header.Set(events.HeaderEpoch, strconv.FormatUint(env.Epoch, 10))
	msg.Header.Set(events.HeaderSeq, strconv.FormatUint(env.Seq, 10))
	msg.Header.Set(events.HeaderType, o.OutputType())
	if env.TraceParent != "" {
		msg.Header.Set(events.HeaderTraceParent, env.TraceParent)
	}
	if p.onPublish != nil {
		isState := false
		switch o.(type) {
		case events.RunState, events.RunUsage: // the worker's own, not the engine's output
			isState = true
		}
		first := !isState && !p.published
		p.published = p.published || !isState
		p.onPublish(o, first)
	}
	return p.send(&inflight{msg: msg})
}

func (p *publisher) send(f *inflight) error {
	var err error
	for attempt := 0; attempt < maxRetries; attempt++ {
		if f.fut, err = p.js.PublishMsgAsync(f.msg); err == nil {
			p.inflight = append(p.inflight, *f)
			if len(p.inflight) >= 512 {
				return p.prune()
			}
			return nil
		}
		time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond) // the async window is full: back off
	}
	return fmt.Errorf("publish %s: %w", f.msg.Header.Get(events.HeaderMsgID), err)
}

// prune drops acknowledged publications and republishes failed ones (same
// Msg-Id, so a publication that was stored after all is not stored twice).
func (p *publisher) prune() error {
	keep := p.inflight[:0]
	var retry []inflight
	for _, f := range p.inflight {
		select {
		case <-f.fut.Ok():
		case <-f.fut.Err():
			retry = append(retry, f)
		default:
			keep = append(keep, f)
		}
	}
	p.inflight = keep
	for _, f := range retry {
		if f.retries++; f.retries > maxRetries {
			return fmt.Errorf("publish %s: gave up after %d attempts", f.msg.Header.Get(events.HeaderMsgID), f.retries)
		}
		if err := p.send(&f); err != nil {
			return err
		}
	}
	return nil
}

// waitAcks waits until every publication is acknowledged, retrying failures.
func (p *publisher) waitAcks() error {
	deadline := time.NewTimer(ackTimeout)
	defer deadline.Stop()
	for len(p.inflight) > 0 {
		f := p.inflight[0]
		select {
		case <-f.fut.Ok():
			p.inflight = p.inflight[1:]
		case err := <-f.fut.Err():
			p.inflight = p.inflight[1:]
			if f.retries++; f.retries > maxRetries || p.fenced.Load() {
				return fmt.Errorf("publish %s: %w", f.msg.Header.Get(events.HeaderMsgID), err)
			}
			time.Sleep(time.Duration(min(f.retries, 10)) * 100 * time.Millisecond)
			if err := p.send(&f); err != nil {
				return err
			}
		case <-deadline.C:
			return fmt.Errorf("publish: %d events unacknowledged after %v", len(p.inflight), ackTimeout)
		}
	}
	return nil
}
