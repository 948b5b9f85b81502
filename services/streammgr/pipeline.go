package streammgr

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// pinTiming returns how long the server keeps the consumer pinned to an
// instance that sends no new pull request (the TTL, which is also how long a
// dead instance holds the pin), and how long each pull request of the pinned
// instance lives. Only a new pull request carrying the pin id renews the
// pin — deliveries and heartbeats do not — and a Consume sends one only when
// its request expires or half its batch is used. So requests must expire,
// and be renewed, well within the TTL: with the default 30 s expiry and a
// 10 s TTL, the pin lapsed 10 s into every quiet spell or long turn, the next
// delivery was refused with "pin ID mismatch", and the pin went to whichever
// instance asked first, while the old one still routed what it had buffered.
func pinTiming(ackWait time.Duration) (ttl, expiry time.Duration) {
	ttl = max(ackWait, 3*time.Second)
	return ttl, max(ttl/4, time.Second) // jetstream refuses an expiry under 1 s
}

// pipeline consumes EVENTS: it routes each engine event as it arrives
// (publishing chat events at once: live latency never waits for Postgres)
// and hands the outcome to the writer, which commits in batches and acks
// after the commit.
type pipeline struct {
	ackWait time.Duration
	db      *pgxpool.Pool
	nc      *nats.Conn // notifications
	js      jetstream.JetStream
	log     *slog.Logger
	bus     bus
	disp    *dispatcher  // the writers dispatch a session's next queued turn
	watch   *budgetWatch // the writers kick it with the tenants whose runs spent

	writes  []chan *write // one per writer; a session's events go to one
	stopped chan struct{} // closed when run returns: nothing routes any more
	chat    *chatPublisher
	prog    *progress

	mu   sync.Mutex // guards runs; held while routing
	runs map[string]*runRoute

	deletedMu sync.Mutex
	deleted   map[string]time.Time // runs of deleted sessions, when they were deleted
	stale     map[string]bool      // EVENTS subjects of deleted runs that received events since the last purge
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
	// primed is when this instance recorded the run as it dispatched it;
	// zero once it routed one of the run's events here.
	primed time.Time
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
	routed time.Time
}

// newPipeline makes the pipeline of cfg's writers; its dispatcher is set
// before it runs.
func newPipeline(cfg Config, db *pgxpool.Pool, nc *nats.Conn, js jetstream.JetStream, log *slog.Logger) *pipeline {
	writes := make([]chan *write, max(cfg.Writers, 1))
	for i := range writes {
		writes[i] = make(chan *write, 4096)
	}
	return &pipeline{ackWait: cfg.AckWait, db: db, nc: nc, js: js, log: log, bus: bus{js: js, log: log},
		writes: writes, stopped: make(chan struct{}), chat: newChatPublisher(js, log), prog: newProgress(len(writes)),
		runs: map[string]*runRoute{}, deleted: map[string]time.Time{}, stale: map[string]bool{}}
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
		AckWait:        p.ackWait,
		MaxAckPending:  50_000,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{priorityGroup},
	}
	cfg.PinnedTTL, _ = pinTiming(p.ackWait)
	if old, err := p.js.Consumer(ctx, events.StreamEvents, consumerName); err == nil {
		if info := old.CachedInfo(); info.Config.AckPolicy != cfg.AckPolicy {
			if err := p.js.DeleteConsumer(ctx, events.StreamEvents, consumerName); err != nil {
				return nil, fmt.Errorf("replace events consumer: %w", err)
			}
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, info.AckFloor.Stream+1
			p.log.Info("replaced the events consumer to change its ack policy", "from_seq", cfg.OptStartSeq)
		}
	}
	return p.js.CreateOrUpdateConsumer(ctx, events.StreamEvents, cfg)
}

// run consumes until ctx ends. A consumption that stops (its consumer was
// deleted, or could not be created) is started again a second later;
// readiness reports it meanwhile.
func (p *pipeline) run(ctx context.Context) error {
	defer close(p.stopped)
	for {
		err := p.consume(ctx)
		if ctx.Err() != nil {
			return nil
		}
		p.prog.consuming(nil, err)
		p.log.Error("not consuming EVENTS: trying again", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// consume reads EVENTS until ctx ends or the consumption stops, and says why.
func (p *pipeline) consume(ctx context.Context) error {
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
	var lastErr error
	var errMu sync.Mutex
	_, expiry := pinTiming(p.ackWait)
	cc, err := c.Consume(func(msg jetstream.Msg) { p.handle(ctx, msg) },
		jetstream.PullMaxMessages(2000), jetstream.PullPriorityGroup(priorityGroup), jetstream.PullExpiry(expiry),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			switch {
			case errors.Is(err, jetstream.ErrNoHeartbeat):
			case errors.Is(err, jetstream.ErrPinIDMismatch):
				// This instance did not renew its pin within the TTL (it
				// was stalled): another instance may have routed since.
				pinLost.Add(ctx, 1)
				p.log.Warn("events consumer lost its pin", "err", err)
			default:
				p.log.Warn("events consumer", "err", err)
			}
			errMu.Lock()
			lastErr = err
			errMu.Unlock()
		}))
	if err != nil {
		return fmt.Errorf("consume events: %w", err)
	}
	defer p.stopConsuming(ctx, cc)
	p.prog.consuming(c, nil)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-cc.Closed():
			errMu.Lock()
			defer errMu.Unlock()
			return fmt.Errorf("consumption of EVENTS stopped: %v", lastErr)
		case <-tick.C:
			p.housekeep(ctx)
			p.purgeStale(ctx)
		}
	}
}

// stopConsuming stops cc and returns once no delivery is being handled:
// Stop alone leaves the callback running on what the subscription had
// already received, which routed (and published to CHAT) after streammgr
// had stopped. It then gives up the pin, so that another instance routes
// at once instead of after the pin's TTL.
func (p *pipeline) stopConsuming(ctx context.Context, cc jetstream.ConsumeContext) {
	// Drain hands what the subscription holds to handle, which gives it
	// back (handBack) once ctx has ended, instead of leaving it to be
	// redelivered when its ack wait runs out.
	cc.Drain()
	select {
	case <-cc.Closed():
	case <-time.After(10 * time.Second):
		p.log.Error("EVENTS deliveries still being handled 10 s after the consumer stopped")
	}
	if ctx.Err() == nil {
		return // the consumption failed: this instance consumes again at once
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if s, err := p.js.Stream(uctx, events.StreamEvents); err == nil {
		if err := s.UnpinConsumer(uctx, consumerName, priorityGroup); err != nil {
			p.log.Info("could not give up the events consumer's pin", "err", err)
		}
	}
}

// handle takes one message from EVENTS.
func (p *pipeline) handle(ctx context.Context, msg jetstream.Msg) {
	if ctx.Err() != nil {
		handBack(msg)
		return
	}
	meta, err := msg.Metadata()
	if err != nil {
		p.log.Error("event without metadata dropped", "err", err)
		_ = msg.Term()
		return
	}
	seq := meta.Sequence.Stream
	skip := func() { _ = msg.Ack() } // nothing to route or store
	env, raw, err := events.DecodeEnvelopeRaw(msg.Data())
	if err != nil {
		p.log.Error("undecodable event dropped", "subject", msg.Subject(), "stream_seq", seq, "err", err)
		skip()
		return
	}
	if p.isDeleted(env.Run) {
		p.dropStale(msg) // its session was deleted
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rr, err := p.stateFor(ctx, env)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// Runs are committed before their jobs go out: this one was deleted.
			p.log.Info("event of an unknown run dropped", "run_id", env.Run)
			p.markDeleted([]string{env.Run})
			p.dropStale(msg)
			return
		}
		p.log.Error("load run", "run_id", env.Run, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	if env.Tenant != rr.tenant || env.Session != rr.session {
		p.log.Error("event names another tenant or session than its run: dropped", "run_id", env.Run)
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
		w.typ = h.Env.Output.OutputType() // w.body is the output as it arrived
		w.routed = time.Now()
		eventsRouted.Add(ctx, 1, metric.WithAttributes(attribute.String("type", w.typ)))
		rr.primed = time.Time{}
		w.chat = p.publish(ctx, rr, w.out)
		if w.out.Terminal != "" {
			rr.ended = time.Now()
		}
		select {
		case p.writerOf(rr.session) <- w:
		case <-ctx.Done():
			handBack(w.msg)
		}
	}
}

// handBack returns msg to EVENTS unacknowledged, for whichever instance
// routes next to take at once: this one is stopping and will not commit
// it. Routing it again is harmless (its chat events keep their Msg-Ids,
// the log its key).
func handBack(msg jetstream.Msg) {
	if msg != nil {
		_ = msg.Nak()
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
		p.log.Error("chat subject", "err", err)
		return nil
	}
	msgs := make([]*nats.Msg, 0, len(out.Chat))
	for i, ev := range out.Chat {
		data, err := ev.MarshalJSON()
		if err != nil {
			p.log.Error("encode chat event", "type", ev.Type, "err", err)
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
					_ = p.nc.Publish(ns, data)
				}
			}
		}
	}
	return pubs
}

// stateFor returns the memory of env's run. A run this instance dispatched
// and only primed, whose first event here is not the first of the run, had
// its events routed by another instance (the one the consumer was pinned to,
// until it went away): its memory is reloaded from what that one committed,
// or it would wait for events that are never redelivered.
func (p *pipeline) stateFor(ctx context.Context, env events.Envelope) (*runRoute, error) {
	rr, err := p.route(ctx, env.Run)
	if err != nil || rr.primed.IsZero() || env.Seq <= 1 {
		return rr, err
	}
	delete(p.runs, env.Run)
	return p.route(ctx, env.Run)
}

// route returns the memory of run, loading it from the committed state the
// first time: its row, the session HEAD, and the partial text streamed since
// its last saved message (rebuilt from the event log).
func (p *pipeline) route(ctx context.Context, run string) (*runRoute, error) {
	if rr, ok := p.runs[run]; ok {
		return rr, nil
	}
	rt, err := store.LoadRouting(ctx, p.db, run)
	if err != nil {
		return nil, err
	}
	row := rt.Run
	var partial *router.Partial
	if row.Epoch > 0 { // a worker already sent events: what streamed since the last message
		if partial, err = partialsSince(ctx, p.db, run); err != nil {
			return nil, err
		}
	}
	r := router.Run{ID: row.ID, Tenant: row.Tenant, SessionID: row.SessionID, ProjectID: row.ProjectID,
		Engine: row.Engine, ModelName: rt.ModelName, AccountID: rt.AccountID, AccountName: rt.Account,
		Effort: row.Effort, SenderID: row.RequestedBy, SenderName: row.SenderName, State: row.State,
		Epoch: row.Epoch, LastSeq: row.LastSeq, Head: rt.Head, EngineSessionKnown: row.EngineSession != ""}
	rr := &runRoute{st: router.New(r, partial), tenant: row.Tenant, session: row.SessionID, project: row.ProjectID}
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
		p.runs[run.ID] = &runRoute{st: router.New(r, nil), tenant: run.Tenant, session: run.SessionID, project: run.ProjectID,
			primed: time.Now()}
	}
}

// partialsSince rebuilds what the run streamed after its last saved
// message, and which stream is still open, from the committed event log.
func partialsSince(ctx context.Context, db eventlog.DB, run string) (*router.Partial, error) {
	evs, err := eventlog.ReadAll(ctx, db, run)
	if err != nil {
		return nil, err
	}
	p := &router.Partial{}
	for _, ev := range evs {
		switch ev.Type { // a saved message clears by its type: no need to decode it
		case events.TypeAssistant:
			p.Fold(events.AssistantMessage{})
		case events.TypeReasoning:
			p.Fold(events.ReasoningMessage{})
		case events.TypeStreamEvent:
			if o, err := events.DecodeOutput(ev.Payload); err == nil {
				p.Fold(o)
			}
		}
	}
	return p, nil
}

// housekeep routes envelopes that waited too long for a missing predecessor
// and forgets runs that ended a while ago, and runs primed here whose events
// never came (another instance routes them).
func (p *pipeline) housekeep(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for id, rr := range p.runs {
		if ready := rr.ord.Expire(now); len(ready) > 0 {
			p.log.Warn("routing past a gap in a run's events", "run_id", id, "events", len(ready))
			p.routeReady(ctx, rr, ready)
		}
		idle := rr.ended
		if idle.IsZero() {
			idle = rr.primed
		}
		if !idle.IsZero() && now.Sub(idle) > 2*time.Minute && !rr.ord.Pending() {
			delete(p.runs, id)
		}
	}
	p.deletedMu.Lock()
	defer p.deletedMu.Unlock()
	for id, at := range p.deleted {
		delete(p.runs, id)
		if now.Sub(at) > 10*time.Minute {
			delete(p.deleted, id)
		}
	}
}
