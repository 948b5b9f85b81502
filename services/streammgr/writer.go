package streammgr

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/eventlog"
	"clopen.dev/services/streammgr/internal/store"
)

// writeLoop is one writer: it owns the sessions whose events reach it on
// writes, and drains them into batches of up to eventlog.MaxBatch,
// commits each batch (event log, projections, run and session rows, the
// session's chat cursor) in one transaction, and only then acks each of the
// batch's messages. A failing commit is retried; the messages stay unacked meanwhile
// and are kept in progress so JetStream does not redeliver them.
func (p *pipeline) writeLoop(ctx context.Context, writes <-chan *write) error {
	batch := make([]*write, 0, eventlog.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case w := <-writes:
			batch = append(batch, w)
		case <-ctx.Done():
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
		fx, err := p.commitWithRetry(ctx, batch)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil // not committed: the messages will be redelivered
		}
		for _, w := range batch {
			if w.msg != nil {
				_ = w.msg.Ack()
			}
		}
		for _, d := range fx {
			p.m.afterDispatch(ctx, d)
		}
	}
}

func (p *pipeline) commitWithRetry(ctx context.Context, batch []*write) ([]*dispatched, error) {
	delay := 100 * time.Millisecond
	lastProgress := time.Now()
	for {
		began := time.Now()
		fx, err := p.commit(ctx, batch)
		if err == nil {
			batchLatency.Record(ctx, time.Since(began).Seconds())
			batchRows.Record(ctx, int64(len(batch)))
			return fx, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		p.m.log.Error("commit event batch (retrying)", "events", len(batch), "err", err)
		if connectionLost(err) {
			// Postgres restarted or failed over: every pooled connection is
			// dead, and the pool would otherwise hand them out one by one.
			p.m.db.Reset()
		}
		if time.Since(lastProgress) > p.m.cfg.AckWait/3 {
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

// commit writes one batch in one transaction and returns the runs it
// dispatched (the next queued turn of sessions whose run ended).
func (p *pipeline) commit(ctx context.Context, batch []*write) ([]*dispatched, error) {
	cursors := p.waitChat(ctx, batch)
	var fx []*dispatched
	err := pgx.BeginFunc(ctx, p.m.db, func(tx pgx.Tx) error {
		evs := make([]eventlog.Event, 0, len(batch))
		for _, w := range batch {
			if w.out.Store {
				evs = append(evs, eventlog.Event{Key: eventlog.Key{Run: w.run, Epoch: int64(w.out.Epoch), Seq: int64(w.out.Seq)},
					JSSeq: int64(w.jsSeq), Type: w.typ, Payload: w.body})
			}
		}
		fresh, err := eventlog.Append(ctx, tx, evs)
		if err != nil {
			return err
		}
		var applied []*write
		for _, w := range batch {
			if w.out.Store && fresh[eventlog.Key{Run: w.run, Epoch: int64(w.out.Epoch), Seq: int64(w.out.Seq)}] {
				applied = append(applied, w)
			}
		}
		ended, err := store.Apply(ctx, tx, project(applied), cursors)
		if err != nil {
			return err
		}
		for _, e := range ended {
			d, err := p.m.dispatchNext(ctx, tx, e.Tenant, e.Session, e.Run)
			if err != nil {
				return err
			}
			if d != nil {
				fx = append(fx, d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for _, w := range batch {
		if !w.out.At.IsZero() {
			commitLag.Record(ctx, now.Sub(w.out.At).Seconds())
		}
		if w.out.Terminal != "" && w.out.Store {
			p.m.flagEnded(ctx, w.run)
			runsEnded.Add(ctx, 1, metric.WithAttributes(attribute.String("state", string(w.out.Terminal))))
		}
	}
	return fx, nil
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

// project converts routed writes into the store's projection input.
func project(ws []*write) []store.Projected {
	out := make([]store.Projected, len(ws))
	for i, w := range ws {
		out[i] = store.Projected{Tenant: w.tenant, Session: w.sess, Run: w.run, Out: w.out}
	}
	return out
}

// dispatchNext ends run's hold on its session and starts the session's next
// queued turn, if any, in the caller's transaction.
func (m *Manager) dispatchNext(ctx context.Context, tx pgx.Tx, tenant, session, run string) (*dispatched, error) {
	l, err := store.LockSession(ctx, tx, tenant, session)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // the session was deleted
	}
	if err != nil {
		return nil, err
	}
	if l.ActiveRunID != run && l.ActiveRunID != "" {
		return nil, nil
	}
	if err := store.SetActiveRun(ctx, tx, session, ""); err != nil {
		return nil, err
	}
	l.ActiveRunID = ""
	next, ok, err := store.NextQueued(ctx, tx, session)
	if err != nil || !ok {
		return nil, err
	}
	return m.dispatchLocked(ctx, tx, l, next)
}

// flagEnded marks an ended run in run_ctl so that a stale copy of its job
// (redelivered, or republished by the sweeper) is dropped by any worker.
func (m *Manager) flagEnded(ctx context.Context, run string) {
	b := []byte(`{"verb":"` + events.VerbAbandon + `","at":"` + time.Now().UTC().Format(time.RFC3339Nano) + `"}`)
	if _, err := m.flags.Put(ctx, run, b); err != nil {
		m.log.Warn("flag ended run", "run_id", run, "err", err)
	}
}
