package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/natstrace"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/engine-worker/internal/engine"
)

var tracer = otel.Tracer("clopen.dev/services/engine-worker")

// handle runs one job from claim to ack. The order at the end matters:
// terminal event (acknowledged by JetStream), then the lease is deleted, then
// the job is acked — so a run is never left without an owner and without a
// terminal event at the same time.
func (w *Worker) handle(runsCtx context.Context, msg jetstream.Msg) {
	var job events.Job
	if err := json.Unmarshal(msg.Data(), &job); err != nil {
		w.log.Error("poison job dropped", "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return
	}
	if err := job.Validate(); err != nil {
		w.log.Error("poison job dropped", "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return
	}
	log := w.log.With("run_id", job.RunID, "tenant", job.Tenant, "engine", job.Engine)
	// Everything the run asks of artifacts (its content, its account's
	// credential) goes with the run's own token.
	ctx := svc.WithToken(natstrace.Extract(runsCtx, msg.Headers()), job.DispatchToken)

	if flag, ok := w.endFlag(ctx, job.RunID); ok {
		// streammgr already ended this run (cancelled while queued, or lost).
		log.InfoContext(ctx, "job dropped: run already ended", "flag", flag.Verb)
		_ = msg.Ack()
		return
	}
	if w.yields(ctx, job, msg) {
		return
	}
	owner, _ := json.Marshal(events.RunOwner{Worker: w.cfg.ID, Tenant: job.Tenant, ClaimedAt: time.Now().UTC()})
	epoch, err := w.owners.Create(ctx, job.RunID, owner)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			// Someone still holds the lease; try again once it may have lapsed.
			_ = msg.NakWithDelay(LeaseTTL)
			return
		}
		log.ErrorContext(ctx, "claim run", "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}

	ctx, span := tracer.Start(ctx, "invoke_agent "+string(job.Engine), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", string(job.Engine)),
		attribute.String("gen_ai.provider.name", providerName(job)),
		attribute.String("gen_ai.request.model", job.Model),
		attribute.String("gen_ai.conversation.id", job.SessionID),
		attribute.String("clopen.run_id", job.RunID),
		attribute.Int64("clopen.epoch", int64(epoch))))
	defer span.End()
	h := nats.Header{}
	natstrace.Inject(ctx, h)

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &run{job: job, epoch: epoch, msg: msg, ctx: runCtx, cancel: cancel, state: events.RunClaimed, asks: make(chan string, 16)}
	r.rev.Store(epoch)
	r.renewedAt.Store(time.Now().UnixNano())
	base := events.Envelope{Tenant: job.Tenant, Run: job.RunID, Session: job.SessionID, Epoch: epoch,
		TraceParent: h.Get(events.HeaderTraceParent)}
	if r.pub, err = newPublisher(w.js, base, w.cfg.Coalesce, &r.fenced); err != nil {
		log.ErrorContext(ctx, "publisher", "err", err)
		_ = msg.Term()
		return
	}
	w.register(r)
	defer w.unregister(r)
	// A flag set between the check above and register was seen by
	// watchFlags while it could not find the run: read it again.
	if f, ok := w.endFlag(ctx, job.RunID); ok {
		r.cancel(cancelCause(f.Reason, f.Error))
	}
	engineAttr := metric.WithAttributes(attribute.String("engine", string(job.Engine)))
	runsActive.Add(ctx, 1, engineAttr)
	defer runsActive.Add(context.WithoutCancel(ctx), -1, engineAttr)
	claimedAt := time.Now()
	genAI := genAIAttrs(job, !w.cfg.MetricsWithoutTenant)
	spans := newRunTrace(ctx, job.Model)
	r.spans = spans
	r.pub.onPublish = func(o events.Output, first bool) {
		eventsPublished.Add(ctx, 1, engineAttr)
		spans.observe(o)
		if first {
			took := time.Since(claimedAt).Seconds()
			firstOutput.Record(ctx, took, engineAttr)
			genAITTFT.Record(ctx, took, metric.WithAttributes(genAI...))
		}
	}

	state, reason, errMsg, kind := w.execute(runCtx, r, log)
	r.mu.Lock()
	res := r.result
	r.mu.Unlock()
	spans.end(state, kind, errMsg, res)
	if !r.fenced.Load() {
		final := events.RunState{State: state, Reason: reason, Error: errMsg, ErrorKind: kind, MeteredUsage: r.metered,
			Snapshot: r.snapshot}
		if err := r.pub.emit(final); err != nil {
			log.ErrorContext(ctx, "publish terminal event", "err", err)
		}
	}
	closeCtx, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancelClose()
	if err := r.pub.close(closeCtx); err != nil {
		// The terminal event may not be stored: keep the lease so the reaper,
		// not a silent success, decides the run's fate once it lapses.
		log.ErrorContext(ctx, "flush run events", "err", err)
		_ = msg.Ack()
		return
	}
	if !r.fenced.Load() {
		r.released.Store(true)
		if err := w.owners.Delete(closeCtx, job.RunID, jetstream.LastRevision(r.rev.Load())); err != nil {
			log.WarnContext(ctx, "release lease", "err", err)
		}
	}
	_ = msg.Ack()
	runsFinished.Add(ctx, 1, metric.WithAttributes(attribute.String("engine", string(job.Engine)), attribute.String("state", string(state))))
	recordGenAI(ctx, genAI, time.Since(claimedAt), state, kind, res, r.metered)
}

// execute runs the engine and decides the run's terminal state.
func (w *Worker) execute(ctx context.Context, r *run, log interface {
	ErrorContext(context.Context, string, ...any)
}) (events.RunStateName, string, string, events.ErrorKind) {
	job := r.job
	if err := r.setState(events.RunClaimed, w.cfg.ID); err != nil {
		return events.RunFailed, "", err.Error(), events.KindInternal
	}
	workspace, err := w.sessionWorkspace(job)
	if err != nil {
		return events.RunFailed, "", err.Error(), events.KindInternal
	}
	// The artifacts plan goes into the engine's config dir before the engine
	// instance is acquired, so a fresh instance starts on it.
	prep, err := w.prepare(ctx, r)
	if err != nil {
		return events.RunFailed, "", err.Error(), events.KindInternal
	}
	if prep.fresh {
		// A config dir made anew holds none of the engine session state
		// kept in it: the workspace's copy of the session is not whole, so
		// the restore below brings the session back from its snapshot.
		if err := writeMarker(workspace, ""); err != nil {
			return events.RunFailed, "", err.Error(), events.KindInternal
		}
	}
	eng, release, err := w.pool.Acquire(ctx, engine.Key{Engine: job.Engine, Tenant: job.Tenant, Account: job.AccountID})
	if err != nil {
		return events.RunFailed, "", err.Error(), engine.KindOf(err)
	}
	defer release()
	// The effort is clamped to the model before the engine starts, and the
	// clamped one is what the run reports and its messages are stamped with.
	effort, price := w.clampEffort(ctx, job)
	r.price = price
	req := engine.Request{Tenant: job.Tenant, RunID: job.RunID, SessionID: job.SessionID, ProjectID: job.ProjectID,
		Workspace: workspace, ConfigDir: prep.configDir, Prompt: prep.prompt, Model: job.Model, Provider: job.Provider,
		AccountID: job.AccountID, Effort: deref(effort, job.Effort), ResumeSessionID: job.ResumeSessionID, Interaction: r,
		Permissions: r.policy}
	if w.mcp != nil {
		// The run's key to the bridge is forgotten when it ends. Its mcp
		// tokens name its external servers: the bridge serves it no other.
		url, remove := w.mcp.Register(bustoken.Claims{TenantID: job.Tenant, ProjectID: job.ProjectID, SessionID: job.SessionID,
			RunID: job.RunID, Engine: string(job.Engine), Servers: prep.mcpServers}, job.DispatchToken)
		defer remove()
		req.MCPServers = append(req.MCPServers, engine.MCPServer{Name: MCPServerName, URL: url})
		for _, slug := range prep.mcpServers {
			req.MCPServers = append(req.MCPServers, engine.MCPServer{Name: slug, URL: url + "/ext/" + slug,
				Tools: func(ctx context.Context) ([]string, error) { return w.mcp.Tools(ctx, url, slug) }})
		}
	}
	// The session's state comes first: a turn that ran without the files
	// and engine session its chat left would run on a history nobody had.
	prev, err := w.restore(ctx, eng, req, job)
	if err != nil {
		snapshotFailures.Add(ctx, 1)
		return events.RunFailed, "", "the session's files could not be restored: " + err.Error(), events.KindInternal
	}
	if err := r.setRunning(prep.revision, effort); err != nil {
		return events.RunFailed, "", err.Error(), events.KindInternal
	}
	runErr := w.metered(ctx, r, engine.RetriesSilently(eng), func() error { return eng.Run(ctx, req, r.emit) })
	cause := context.Cause(ctx)
	if ctx.Err() == nil {
		cause = nil
	}
	r.mu.Lock()
	res := r.result
	r.mu.Unlock()
	if !errors.Is(cause, errLeaseLost) && !r.fenced.Load() {
		// Whatever the turn's end, what it did to the files and the engine
		// session is kept (a lost lease means another worker may own the
		// run now: its state is that worker's to save).
		session := job.ResumeSessionID
		if res != nil && res.SessionID != "" {
			session = res.SessionID
		}
		r.snapshot = w.capture(ctx, eng, req, prev, session)
		if s := r.snapshot; s.Error != "" {
			// The user is told: the turn's result stands, its files do not.
			if err := r.pub.emit(events.Notification{SessionID: session, Level: events.LevelWarning,
				Title: "The session's state was not saved", Message: s.Error}); err != nil {
				log.ErrorContext(ctx, "publish snapshot warning", "err", err)
			}
		}
	}
	var budget *budgetStop
	switch {
	case errors.As(cause, &budget):
		return events.RunFailed, events.StopBudget, budget.msg, events.KindBudgetExhausted
	case errors.Is(cause, engine.ErrCancelled):
		return events.RunCancelled, "cancelled by user", "", ""
	case errors.Is(cause, errShutdown):
		return events.RunCancelled, "worker shutting down", "", ""
	case errors.Is(cause, engine.ErrInterrupted):
		return events.RunCompleted, "interrupted", "", ""
	case errors.Is(cause, errLeaseLost):
		return events.RunLost, "lease lost", "", ""
	case runErr != nil:
		if !errors.Is(runErr, ErrFenced) {
			log.ErrorContext(ctx, "engine run", "err", runErr)
		}
		return events.RunFailed, "", runErr.Error(), engine.KindOf(runErr)
	case res == nil:
		return events.RunFailed, "", "the engine ended the turn without a result", events.KindCrashed
	case res.IsError():
		return events.RunFailed, "", strings.Join(res.Errors, "; "), events.KindProvider
	}
	return events.RunCompleted, "", "", ""
}

// MeterGrace is how long the end of a run waits for the model responses its
// chat was still receiving when the turn ended (see modelproxy.Span.End).
const MeterGrace = 5 * time.Second

// metered runs turn with the run's chat metered by the model proxies and
// keeps what they counted on r; while it runs, the count so far goes out
// as the run's usage events (reportUsage), and, for an engine whose agent
// retries in silence, each failed model call as a retry notice.
func (w *Worker) metered(ctx context.Context, r *run, silentRetries bool, turn func() error) error {
	if w.proxies == nil {
		return turn()
	}
	span := w.proxies.Begin(r.job.Tenant, r.job.SessionID)
	if r.spans != nil {
		span.Traced(r.spans.parent, providerName(r.job))
	}
	stop := w.reportUsage(ctx, r, span, silentRetries)
	err := turn()
	stop()
	end, cancel := context.WithTimeout(context.WithoutCancel(ctx), MeterGrace)
	defer cancel()
	if u, ok := span.End(end); ok {
		r.metered = &u
	}
	return err
}

func (w *Worker) register(r *run) {
	subject, _ := events.ControlWildcard(r.job.RunID)
	sub, err := w.nc.ChanSubscribe(subject, w.ctl)
	if err != nil {
		w.log.Error("subscribe control", "run_id", r.job.RunID, "err", err)
	}
	r.sub = sub
	w.mu.Lock()
	w.runs[r.job.RunID] = r
	w.mu.Unlock()
}

func (w *Worker) unregister(r *run) {
	if r.sub != nil {
		_ = r.sub.Unsubscribe()
	}
	w.mu.Lock()
	delete(w.runs, r.job.RunID)
	w.mu.Unlock()
}

func (w *Worker) lookup(runID string) *run {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runs[runID]
}

// endFlag returns the run's flag when it says the run is over (cancelled
// or abandoned).
func (w *Worker) endFlag(ctx context.Context, runID string) (events.RunFlag, bool) {
	f, ok := w.flag(ctx, runID)
	return f, ok && (f.Verb == events.VerbAbandon || f.Verb == events.VerbCancel)
}

// flag reads the durable control flag of a run, if any.
func (w *Worker) flag(ctx context.Context, runID string) (events.RunFlag, bool) {
	e, err := w.flags.Get(ctx, runID)
	if err != nil {
		return events.RunFlag{}, false
	}
	var f events.RunFlag
	if json.Unmarshal(e.Value(), &f) != nil {
		return events.RunFlag{}, false
	}
	return f, true
}

// deref returns *p, or def when p is nil.
func deref(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
