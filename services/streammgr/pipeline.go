package streammgr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/eventlog"
	"clopen.dev/services/streammgr/internal/router"
	"clopen.dev/services/streammgr/internal/store"
)

// consumerName is the durable consumer of EVENTS; one streammgr instance at
// a time is pinned to it, so each run's events are routed by one process in
// order, and another instance takes over when the pinned one goes away.
const (
	consumerName  = "streammgr"
	priorityGroup = "streammgr"
)

// pipeline consumes EVENTS: it routes each engine event as it arrives
// (publishing chat events at once: live latency never waits for Postgres)
// and hands the outcome to the writer, which commits in batches and acks
// after the commit.
type pipeline struct {
	m      *Manager
	writes []chan *write // one per writer; a session's events go to one
	chat   *chatPublisher

	mu   sync.Mutex // guards runs; held while routing
	runs map[string]*runRoute
}

// writerOf is the queue of the writer that commits session's events.
func (p *pipeline) writerOf(session string) chan *write {
	h := fnv.New32a()
	h.Write([]byte(session))
	return p.writes[h.Sum32()%uint32(len(p.writes))]
}

// runRoute is the pipeline's memory of one run.
type runRoute struct {
	st      *router.State
	ord     router.Orderer
	tenant  string
	session string
	project string
	ended   time.Time // when it reached a terminal state: forgotten a while later
}

// write is one routed envelope on its way to Postgres.
type write struct {
	msg    jetstream.Msg // to ack after commit; nil for streammgr's own events
	jsSeq  uint64
	run    string
	tenant string
	sess   string
	out    router.Outcome
	typ    string
	body   []byte // the output as stored
	chat   []*chatPub
}

func newPipeline(m *Manager) *pipeline {
	writes := make([]chan *write, max(m.cfg.Writers, 1))
	for i := range writes {
		writes[i] = make(chan *write, 4096)
	}
	return &pipeline{m: m, writes: writes, chat: newChatPublisher(m.js, m.log), runs: map[string]*runRoute{}}
}

// consumer creates or updates the durable consumer of EVENTS. Every message
// is acked on its own, after its batch commits: with AckAll, an instance
// taking over from a dead one would acknowledge, with its first ack, the
// messages the dead one had received but not committed, and they would never
// be redelivered. A consumer with another ack policy (which cannot be changed
// in place) is replaced by one that starts right after its ack floor.
func (p *pipeline) consumer(ctx context.Context) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:        consumerName,
		Description:    "streammgr: route, persist and project every engine event",
		FilterSubject:  events.SubjectEventsAll,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        p.m.cfg.AckWait,
		MaxAckPending:  50_000,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{priorityGroup},
		PinnedTTL:      p.m.cfg.AckWait,
	}
	if old, err := p.m.js.Consumer(ctx, events.StreamEvents, consumerName); err == nil {
		if info := old.CachedInfo(); info.Config.AckPolicy != cfg.AckPolicy {
			if err := p.m.js.DeleteConsumer(ctx, events.StreamEvents, consumerName); err != nil {
				return nil, fmt.Errorf("replace events consumer: %w", err)
			}
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, info.AckFloor.Stream+1
			p.m.log.Info("replaced the events consumer to change its ack policy", "from_seq", cfg.OptStartSeq)
		}
	}
	return p.m.js.CreateOrUpdateConsumer(ctx, events.StreamEvents, cfg)
}

// run consumes until ctx ends.
func (p *pipeline) run(ctx context.Context) error {
	c, err := p.consumer(ctx)
	if err != nil {
		return fmt.Errorf("events consumer: %w", err)
	}
	lag, _ := meter.Int64ObservableGauge("clopen.streammgr.consumer.pending",
		metric.WithDescription("EVENTS messages not yet delivered (pending) or not yet acked (ack_pending)"))
	reg, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		info, err := c.Info(ctx)
		if err != nil {
			return nil // not observable right now
		}
		o.ObserveInt64(lag, int64(info.NumPending), metric.WithAttributes(attribute.String("kind", "pending")))
		o.ObserveInt64(lag, int64(info.NumAckPending), metric.WithAttributes(attribute.String("kind", "ack_pending")))
		return nil
	}, lag)
	if err == nil {
		defer func() { _ = reg.Unregister() }()
	}
	cc, err := c.Consume(func(msg jetstream.Msg) { p.handle(ctx, msg) },
		jetstream.PullMaxMessages(2000), jetstream.PullPriorityGroup(priorityGroup),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrNoHeartbeat) {
				p.m.log.Warn("events consumer", "err", err)
			}
		}))
	if err != nil {
		return fmt.Errorf("consume events: %w", err)
	}
	defer cc.Stop()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			p.housekeep(ctx)
		}
	}
}

// handle takes one message from EVENTS.
func (p *pipeline) handle(ctx context.Context, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		p.m.log.Error("event without metadata dropped", "err", err)
		_ = msg.Term()
		return
	}
	seq := meta.Sequence.Stream
	skip := func() { _ = msg.Ack() } // nothing to route or store
	env, raw, err := events.DecodeEnvelopeRaw(msg.Data())
	if err != nil {
		p.m.log.Error("undecodable event dropped", "subject", msg.Subject(), "stream_seq", seq, "err", err)
		skip()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rr, err := p.route(ctx, env.Run)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			p.m.log.Warn("event of an unknown run dropped", "run_id", env.Run)
			skip()
			return
		}
		p.m.log.Error("load run", "run_id", env.Run, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	if env.Tenant != rr.tenant || env.Session != rr.session {
		p.m.log.Error("event names another tenant or session than its run: dropped", "run_id", env.Run)
		skip()
		return
	}
	run := rr.st.Run()
	ready := rr.ord.Offer(router.Held{Env: env, Token: &write{msg: msg, jsSeq: seq, body: raw}},
		run.Epoch, run.LastSeq, time.Now())
	p.routeReady(ctx, rr, ready)
}

// routeReady routes envelopes the orderer released, in order.
func (p *pipeline) routeReady(ctx context.Context, rr *runRoute, ready []router.Held) {
	for _, h := range ready {
		w := h.Token.(*write)
		w.run, w.tenant, w.sess = h.Env.Run, rr.tenant, rr.session
		w.out = rr.st.Route(h.Env)
		eventsRouted.Add(ctx, 1, metric.WithAttributes(attribute.String("type", h.Env.Output.OutputType())))
		if w.out.Store {
			w.typ = h.Env.Output.OutputType() // w.body is the output as it arrived
		}
		w.chat = p.publish(ctx, rr, w.out)
		if w.out.Terminal != "" {
			rr.ended = time.Now()
		}
		select {
		case p.writerOf(rr.session) <- w:
		case <-ctx.Done():
			return
		}
	}
}

// publish queues the outcome's chat events for CHAT (in order per session,
// each under a Msg-Id derived from its source event) and sends its
// notifications to the project's members.
func (p *pipeline) publish(ctx context.Context, rr *runRoute, out router.Outcome) []*chatPub {
	if len(out.Chat) == 0 && len(out.Notify) == 0 {
		return nil
	}
	subject, err := events.ChatSubject(rr.tenant, rr.session)
	if err != nil {
		p.m.log.Error("chat subject", "err", err)
		return nil
	}
	msgs := make([]*nats.Msg, 0, len(out.Chat))
	for i, ev := range out.Chat {
		data, err := ev.MarshalJSON()
		if err != nil {
			p.m.log.Error("encode chat event", "type", ev.Type, "err", err)
			continue
		}
		msg := nats.NewMsg(subject)
		msg.Data = data
		msg.Header.Set(events.HeaderMsgID, ev.MsgID(i))
		msgs = append(msgs, msg)
	}
	pubs := p.chat.publish(ctx, rr.session, msgs)
	if len(out.Notify) > 0 {
		if ns, err := events.NotifySubject(rr.tenant, rr.project); err == nil {
			for _, ev := range out.Notify {
				if data, err := ev.MarshalJSON(); err == nil {
					_ = p.m.nc.Publish(ns, data)
				}
			}
		}
	}
	return pubs
}

// route returns the memory of run, loading it from the committed state the
// first time: its row, the session HEAD, and the partial text streamed since
// its last saved message (rebuilt from the event log).
func (p *pipeline) route(ctx context.Context, run string) (*runRoute, error) {
	if rr, ok := p.runs[run]; ok {
		return rr, nil
	}
	rt, err := store.LoadRouting(ctx, p.m.db, run)
	if err != nil {
		return nil, err
	}
	row := rt.Run
	var text, reasoning string
	if row.Epoch > 0 { // a worker already sent events: what streamed since the last message
		if text, reasoning, err = partialsSince(ctx, p.m.db, run); err != nil {
			return nil, err
		}
	}
	r := router.Run{ID: row.ID, Tenant: row.Tenant, SessionID: row.SessionID, ProjectID: row.ProjectID,
		Engine: row.Engine, ModelName: rt.ModelName, AccountID: rt.AccountID, AccountName: rt.Account,
		Effort: row.Effort, SenderID: row.RequestedBy, SenderName: row.SenderName, State: row.State,
		Epoch: row.Epoch, LastSeq: row.LastSeq, Head: rt.Head, EngineSessionKnown: row.EngineSession != ""}
	rr := &runRoute{st: router.New(r, text, reasoning), tenant: row.Tenant, session: row.SessionID, project: row.ProjectID}
	if row.State.Terminal() {
		rr.ended = time.Now()
	}
	p.runs[run] = rr
	return rr, nil
}

// prime records a run streammgr just dispatched, so its first event is
// routed without a database read: the single routing goroutine must not
// stall every run while it loads one.
func (p *pipeline) prime(run store.RunRow, head, modelName, accountName string) {
	r := router.Run{ID: run.ID, Tenant: run.Tenant, SessionID: run.SessionID, ProjectID: run.ProjectID,
		Engine: run.Engine, ModelName: modelName, AccountID: run.Job.AccountID, AccountName: accountName,
		Effort: run.Effort, SenderID: run.RequestedBy, SenderName: run.SenderName, State: events.RunQueued,
		Epoch: 0, LastSeq: 1, Head: head}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.runs[run.ID]; !ok {
		p.runs[run.ID] = &runRoute{st: router.New(r, "", ""), tenant: run.Tenant, session: run.SessionID, project: run.ProjectID}
	}
}

// partialsSince rebuilds the text and reasoning streamed after the run's last
// saved message, from the committed event log.
func partialsSince(ctx context.Context, db eventlog.DB, run string) (string, string, error) {
	evs, err := eventlog.ReadAll(ctx, db, run)
	if err != nil {
		return "", "", err
	}
	var text, reasoning []byte
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeAssistant:
			text = text[:0]
		case events.TypeReasoning:
			reasoning = reasoning[:0]
		case events.TypeStreamEvent:
			o, err := events.DecodeOutput(ev.Payload)
			if err != nil {
				continue
			}
			se := o.(events.StreamEvent)
			buf := &text
			if se.Reasoning {
				buf = &reasoning
			}
			switch se.Event {
			case events.StreamStart:
				*buf = (*buf)[:0]
			case events.StreamDelta:
				*buf = append(*buf, se.Text...)
			case events.StreamStop:
				if se.Reasoning {
					reasoning = reasoning[:0]
				}
			}
		}
	}
	return string(text), string(reasoning), nil
}

// housekeep routes envelopes that waited too long for a missing predecessor
// and forgets runs that ended a while ago.
func (p *pipeline) housekeep(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for id, rr := range p.runs {
		if ready := rr.ord.Expire(now); len(ready) > 0 {
			p.m.log.Warn("routing past a gap in a run's events", "run_id", id, "events", len(ready))
			p.routeReady(ctx, rr, ready)
		}
		if !rr.ended.IsZero() && now.Sub(rr.ended) > 2*time.Minute && !rr.ord.Pending() {
			delete(p.runs, id)
		}
	}
}

// inject routes an event streammgr writes itself (a cancel no worker could
// take, a lease that vanished): published on the run's subject like any
// engine event, with seq 0 so the router places it after the run's events.
func (m *Manager) inject(ctx context.Context, tenant, session, run string, o events.Output, msgID string) error {
	subject, err := events.EventsSubject(tenant, run)
	if err != nil {
		return err
	}
	env := events.Envelope{Tenant: tenant, Run: run, Session: session, EmittedAt: time.Now().UTC(), Output: o}
	data, err := json.Marshal(env)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(events.HeaderRun, run)
	msg.Header.Set(events.HeaderType, o.OutputType())
	_, err = m.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID))
	return err
}
