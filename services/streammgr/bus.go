package streammgr

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/natstrace"
)

// bus is what streammgr writes to JetStream outside the hot pipeline: jobs,
// chat events of request paths, and purges of deleted sessions. The request
// handlers, the dispatcher and the writers share it.
type bus struct {
	js   jetstream.JetStream
	log  *slog.Logger
	runs *bustoken.Signer // signs the dispatch tokens
}

// publishJob sends a run's job to the workers of its engine, with a fresh
// dispatch token for the run.
func (b bus) publishJob(ctx context.Context, job events.Job) error {
	subject, err := events.JobSubject(string(job.Engine))
	if err != nil {
		return err
	}
	if job.DispatchToken, err = b.runToken(turn{Tenant: job.Tenant, User: job.RequestedBy, Project: job.ProjectID,
		Session: job.SessionID, Engine: job.Engine}, job.RunID, job.AccountID); err != nil {
		return err
	}
	data, err := json.Marshal(job)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	if !trace.SpanContextFromContext(ctx).IsValid() && job.TraceParent != "" {
		// Dispatched apart from the request (the admitter, the sweeper):
		// the job continues the trace of the request that started it.
		ctx = natstrace.Extract(ctx, nats.Header{events.HeaderTraceParent: {job.TraceParent}})
	}
	natstrace.Inject(ctx, msg.Header)
	_, err = b.js.PublishMsg(ctx, msg, jetstream.WithMsgID(job.RunID))
	return err
}

// traceParent is ctx's trace context as a W3C traceparent, "" without one.
func traceParent(ctx context.Context) string {
	h := nats.Header{}
	natstrace.Inject(ctx, h)
	return h.Get(events.HeaderTraceParent)
}

// runToken is the dispatch token of run (empty for a prompt expanded
// before its run exists) of turn t with account.
func (b bus) runToken(t turn, run, account string) (string, error) {
	return b.runs.Sign(bustoken.Claims{TenantID: t.Tenant, UserID: t.User, RunID: run, SessionID: t.Session,
		ProjectID: t.Project, Engine: string(t.Engine), AccountID: account})
}

// publishChat publishes chat events synchronously (request paths, not the
// hot pipeline), each under its Msg-Id.
func (b bus) publishChat(ctx context.Context, tenant string, evs []events.ChatEvent) {
	for i, ev := range evs {
		subject, err := events.ChatSubject(tenant, ev.ChatSessionID)
		if err != nil {
			b.log.Error("chat subject", "err", err)
			return
		}
		data, err := json.Marshal(ev)
		if err != nil {
			b.log.Error("encode chat event", "err", err)
			return
		}
		opts := []jetstream.PublishOpt{}
		if id := ev.MsgID(i); id != "" {
			opts = append(opts, jetstream.WithMsgID(id))
		}
		if _, err := b.js.Publish(ctx, subject, data, opts...); err != nil {
			b.log.Error("publish chat event", "type", ev.Type, "err", err)
		}
	}
}

// purgeBus removes what the bus still holds of a deleted session: its CHAT
// subject (the resume buffer, prompts included) and the EVENTS subject of
// each of its runs. A failure is logged; what is left expires with the
// streams' MaxAge.
func (b bus) purgeBus(ctx context.Context, tenant, session string, runs []string) {
	if subject, err := events.ChatSubject(tenant, session); err == nil {
		b.purge(ctx, events.StreamChat, []string{subject})
	}
	subjects := make([]string, 0, len(runs))
	for _, run := range runs {
		if subject, err := events.EventsSubject(tenant, run); err == nil {
			subjects = append(subjects, subject)
		}
	}
	b.purge(ctx, events.StreamEvents, subjects)
}

// purge removes every message on each of subjects from stream.
func (b bus) purge(ctx context.Context, stream string, subjects []string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		b.log.Warn("purge a deleted session from the bus", "stream", stream, "err", err)
		return
	}
	for _, subject := range subjects {
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			b.log.Warn("purge a deleted session from the bus", "subject", subject, "err", err)
		}
	}
}

// inject routes an event streammgr writes itself (a cancel no worker could
// take, a lease that vanished): published on the run's subject like any
// engine event, with seq 0 so the router places it after the run's events.
func (b bus) inject(ctx context.Context, tenant, session, run string, o events.Output, msgID string) error {
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
	_, err = b.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID))
	return err
}
