package streammgr

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/eventlog"
	"clopen.dev/services/streammgr/internal/router"
	"clopen.dev/services/streammgr/internal/store"
)

// writeLoop is writer n: it owns the sessions whose events reach it on
// writes, and drains them into batches of up to eventlog.MaxBatch, commits
// each batch (event log, projections, run and session rows, the session's
// chat cursor) in one transaction, and only then acks each of the batch's
// messages. A commit that fails for a passing reason is retried; the
// messages stay unacked meanwhile and are kept in progress so JetStream does
// not redeliver them. A batch Postgres refuses for what it holds is split
// until the refused event is alone, and that one is set aside (settle): no
// event holds up the others.
func (p *pipeline) writeLoop(ctx context.Context, n int, writes <-chan *write) error {
	batch := make([]*write, 0, eventlog.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case w := <-writes:
			batch = append(batch, w)
		case <-ctx.Done():
			p.handBackQueued(writes)
			return nil
		}
	drain:
		for len(batch) < eventlog.MaxBatch {
			select {
			case w := <-writes:
				batch = append(batch, w)
			default:
				break drain
			}
		}
		p.prog.begin(n, batch)
		fx := p.settle(ctx, n, batch)
		p.prog.end(n)
		if ctx.Err() != nil { // not committed: the next instance routes them again
			for _, w := range batch {
				handBack(w.msg)
			}
			p.handBackQueued(writes)
			return nil
		}
		for _, w := range batch {
			if w.msg != nil {
				_ = w.msg.Ack()
			}
			if p.watch != nil && (w.out.Run.Live != nil || w.out.Terminal != "") {
				p.watch.queue.kick(w.tenant) // its spend grew: the budget watch checks it
			}
		}
		p.disp.admit.kick(fx...) // the tenants of ended runs have room, or a next turn to admit
	}
}

// handBackQueued hands back what waits in writes, uncommitted, once the
// routing that fills it has stopped.
func (p *pipeline) handBackQueued(writes <-chan *write) {
	<-p.stopped
	for {
		select {
		case w := <-writes:
			handBack(w.msg)
		default:
			return
		}
	}
}

// settle commits batch, in parts if it must: when Postgres refuses the
// batch for what it holds, each half is settled on its own, so the events
// around a refused one commit and the refused one ends up alone, to be set
// aside. It returns the tenants whose runs ended: the admitter has work.
func (p *pipeline) settle(ctx context.Context, n int, batch []*write) []string {
	fx, err := p.commitRetrying(ctx, n, batch, nil)
	if err == nil || ctx.Err() != nil {
		return fx
	}
	if len(batch) == 1 {
		return p.bury(ctx, n, batch[0], err)
	}
	p.log.Warn("event batch refused: committing it in parts", "events", len(batch), "err", err)
	mid := len(batch) / 2
	return append(p.settle(ctx, n, batch[:mid]), p.settle(ctx, n, batch[mid:])...)
}

// bury sets aside one event Postgres refused: it is recorded in dead_events
// with the reason, and its run's state changes are applied without its
// content, so the run still moves on (and ends, if this was its terminal
// event); if even that is refused, only the record is written. It is
// logged at Error and counted.
func (p *pipeline) bury(ctx context.Context, n int, w *write, cause error) []string {
	p.log.Error("event refused by Postgres: set aside in streammgr.dead_events", "run_id", w.run, "session_id", w.sess,
		"tenant", w.tenant, "epoch", w.out.Epoch, "seq", w.out.Seq, "type", w.typ, "stream_seq", w.jsSeq, "err", cause)
	eventsDead.Add(ctx, 1, metric.WithAttributes(attribute.String("type", w.typ)))
	fx, err := p.commitRetrying(ctx, n, []*write{w}, &burial{cause: cause, project: true})
	if err == nil || ctx.Err() != nil {
		return fx
	}
	p.log.Error("event's state changes refused too: recorded without them", "run_id", w.run, "seq", w.out.Seq, "err", err)
	if _, err := p.commitRetrying(ctx, n, []*write{w}, &burial{cause: cause}); err != nil && ctx.Err() == nil {
		p.log.Error("event could not be set aside: dropped", "run_id", w.run, "seq", w.out.Seq, "err", err)
	}
	return nil
}

// burial says that a commit records its one write as a dead event.
type burial struct {
	cause   error
	project bool // apply the event's state changes without its content
}

// commitRetrying commits batch, retrying for as long as the failure is one
// that passes (a lost connection, a lost race); it returns the error of a
// batch Postgres refuses for what it holds, or nil once ctx ends.
func (p *pipeline) commitRetrying(ctx context.Context, n int, batch []*write, dead *burial) ([]string, error) {
	delay := 100 * time.Millisecond
	lastProgress := time.Now()
	for {
		began := time.Now()
		fx, err := p.commit(ctx, batch, dead)
		if err == nil {
			p.prog.failed(n, nil)
			batchLatency.Record(ctx, time.Since(began).Seconds())
			batchRows.Record(ctx, int64(len(batch)))
			return fx, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if refused(err) {
			return nil, err
		}
		p.prog.failed(n, err)
		p.log.Error("commit event batch (retrying)", "events", len(batch), "err", err)
		if connectionLost(err) {
			// Postgres restarted or failed over: every pooled connection is
			// dead, and the pool would otherwise hand them out one by one.
			p.db.Reset()
		}
		if time.Since(lastProgress) > p.ackWait/3 {
			for _, w := range batch {
				if w.msg != nil {
					_ = w.msg.InProgress()
				}
			}
			lastProgress = time.Now()
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, nil
		}
		delay = min(delay*2, time.Second)
	}
}

// commit writes one batch in one transaction and returns the tenants of the
// runs that ended in it (their sessions' next queued turns are held for the
// admitter, which dispatches them after the commit). It first
// locks the batch's sessions, as a deletion does, and drops the events of
// sessions that are gone: their runs were deleted with them, and what is
// left of them on the bus is purged after the commit.
func (p *pipeline) commit(ctx context.Context, batch []*write, dead *burial) ([]string, error) {
	cursors := p.waitChat(ctx, batch)
	var fx []string
	var kept, gone, ended []*write
	err := pgx.BeginFunc(ctx, p.db, func(tx pgx.Tx) error {
		live, err := store.LockSessions(ctx, tx, sessionsOf(batch))
		if err != nil {
			return err
		}
		for _, w := range batch {
			if live[w.sess] {
				kept = append(kept, w)
			} else {
				gone = append(gone, w)
			}
		}
		var applied []*write
		if dead != nil {
			if applied, err = p.recordDead(ctx, tx, kept, dead); err != nil {
				return err
			}
		} else if applied, err = appendEvents(ctx, tx, kept); err != nil {
			return err
		}
		for s := range cursors {
			if !live[s] {
				delete(cursors, s)
			}
		}
		ends, err := store.Apply(ctx, tx, project(applied), cursors)
		if err != nil {
			return err
		}
		if err := store.SettleSpend(ctx, tx, endedRuns(ends)); err != nil {
			return err // what the ended runs spent goes to the budgets' ledger with their end
		}
		for _, e := range ends {
			if e.State == events.RunLost && p.disp.retryLost {
				if err := p.disp.retryLocked(ctx, tx, e); err != nil {
					return err
				}
			}
			if err := p.disp.releaseLocked(ctx, tx, e.Tenant, e.Session, e.Run); err != nil {
				return err
			}
			if !slices.Contains(fx, e.Tenant) {
				fx = append(fx, e.Tenant)
			}
		}
		for _, w := range kept {
			if w.out.Terminal != "" && w.out.Store && (dead == nil || dead.project) {
				ended = append(ended, w)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for _, w := range kept {
		if !w.out.At.IsZero() {
			commitLag.Record(ctx, now.Sub(w.out.At).Seconds())
		}
	}
	for _, w := range ended {
		p.disp.flagEnded(ctx, w.run)
		runsEnded.Add(ctx, 1, metric.WithAttributes(attribute.String("state", string(w.out.Terminal))))
	}
	if len(gone) > 0 {
		p.dropDeleted(ctx, gone)
	}
	return fx, nil
}

// appendEvents stores the batch's events in the log and returns the writes
// that were new: only those are projected.
func appendEvents(ctx context.Context, tx pgx.Tx, batch []*write) ([]*write, error) {
	evs := make([]eventlog.Event, 0, len(batch))
	for _, w := range batch {
		if w.out.Store {
			evs = append(evs, eventlog.Event{Key: w.key(), JSSeq: int64(w.jsSeq), Type: w.typ, Payload: w.body})
		}
	}
	fresh, err := eventlog.Append(ctx, tx, evs)
	if err != nil {
		return nil, err
	}
	var applied []*write
	for _, w := range batch {
		if w.out.Store && fresh[w.key()] {
			applied = append(applied, w)
		}
	}
	return applied, nil
}

// recordDead writes the dead_events record of a burial's one write and
// returns what to project of it: its state changes without its content, or
// nothing.
func (p *pipeline) recordDead(ctx context.Context, tx pgx.Tx, kept []*write, dead *burial) ([]*write, error) {
	if len(kept) == 0 {
		return nil, nil // its session was deleted meanwhile
	}
	w := kept[0]
	err := eventlog.Bury(ctx, tx, eventlog.Dead{Key: w.key(), Tenant: w.tenant, Session: w.sess, JSSeq: int64(w.jsSeq),
		Type: w.typ, Payload: w.body, Error: dead.cause.Error(), Projected: dead.project})
	if err != nil || !dead.project || !w.out.Store {
		return nil, err
	}
	stripped := *w
	stripped.out = stateOnly(w.out)
	return []*write{&stripped}, nil
}

// stateOnly keeps what an outcome changes of its run's state — position,
// state, worker, timings, usage, error, terminal — and leaves out its
// content: messages, rewrites, the session's head and summary, rate limits.
// Text it keeps is scrubbed of NUL characters, which Postgres refuses.
func stateOnly(o router.Outcome) router.Outcome {
	c := o.Run
	c.WorkerID, c.EngineSession, c.Error = eventlog.Scrub(c.WorkerID), eventlog.Scrub(c.EngineSession), eventlog.Scrub(c.Error)
	c.ErrorKind = events.ErrorKind(eventlog.Scrub(string(c.ErrorKind)))
	if c.Effort != nil {
		e := eventlog.Scrub(*c.Effort)
		c.Effort = &e
	}
	return router.Outcome{Epoch: o.Epoch, Seq: o.Seq, At: o.At, Store: o.Store, Run: c, Terminal: o.Terminal,
		Session: router.SessionChange{HeadSessionID: eventlog.Scrub(o.Session.HeadSessionID)}}
}

// key is the write's place in its run's log.
func (w *write) key() eventlog.Key {
	return eventlog.Key{Run: w.run, Epoch: int64(w.out.Epoch), Seq: int64(w.out.Seq)}
}

// sessionsOf returns the distinct sessions of a batch.
func sessionsOf(batch []*write) []string {
	out := make([]string, 0, 4)
	for _, w := range batch {
		if !slices.Contains(out, w.sess) {
			out = append(out, w.sess)
		}
	}
	return out
}

// refused reports an error Postgres gives for what a batch holds — a data
// exception (a NUL character in text or jsonb, a value out of range) or an
// integrity violation — or an event that cannot be encoded: retrying the
// same batch cannot succeed. Every other failure (connection, lock,
// resources, schema) is retried.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")
	}
	var value *json.UnsupportedValueError
	var typ *json.UnsupportedTypeError
	var marshal *json.MarshalerError
	return errors.As(err, &value) || errors.As(err, &typ) || errors.As(err, &marshal)
}

// connectionLost reports an error that means the connection (not the
// statement) failed: the server went away or is shutting down.
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// 57P01..57P03: admin/crash shutdown, cannot connect now; 08: connection exceptions.
		return strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08")
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// waitChat waits until the batch's chat events are stored and returns, per
// session, the highest CHAT sequence: the cursor up to which this batch's
// projections describe the session. The chat publisher retries failed
// publications in order before the batch may commit: clients must not miss
// a frame because it happened to be in flight.
func (p *pipeline) waitChat(ctx context.Context, batch []*write) map[string]uint64 {
	cursors := map[string]uint64{}
	for _, w := range batch {
		for _, c := range w.chat {
			if seq := c.wait(ctx); seq > 0 {
				cursors[w.sess] = max(cursors[w.sess], seq)
			}
		}
	}
	return cursors
}

// endedRuns are the ids of ends.
func endedRuns(ends []store.Ended) []string {
	out := make([]string, len(ends))
	for i, e := range ends {
		out[i] = e.Run
	}
	return out
}

// project converts routed writes into the store's projection input.
func project(ws []*write) []store.Projected {
	out := make([]store.Projected, len(ws))
	for i, w := range ws {
		out[i] = store.Projected{Tenant: w.tenant, Session: w.sess, Run: w.run, Out: w.out}
	}
	return out
}
