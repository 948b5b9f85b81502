package streammgr

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/store"
)

// deleteSession removes a session and everything it owns in one transaction
// (store.DeleteSession: the session row is locked first, as every writer of
// it does, so the deletion cannot deadlock with a commit in progress), then
// cancels its unfinished runs through their durable run_ctl flags (the
// owning worker stops at once; a worker that claims one later drops it) and
// purges the session's chat events and its runs' engine events from the
// bus. Events still on their way are dropped: this instance's pipeline
// forgets the runs, and a writer that finds the session gone drops and
// purges whatever reaches it.
func (m *Manager) deleteSession(ctx context.Context, req events.SessionRef) (events.Session, error) {
	s, err := store.GetSession(ctx, m.db, req.TenantID, req.SessionID)
	if err != nil {
		return events.Session{}, mapStoreErr(err, "session")
	}
	var d store.Deleted
	for attempt := 1; ; attempt++ {
		err = pgx.BeginFunc(ctx, m.db, func(tx pgx.Tx) error {
			d, err = store.DeleteSession(ctx, tx, req.TenantID, req.SessionID)
			return err
		})
		if err == nil || attempt == 3 || !lostRace(err) {
			break
		}
	}
	if err != nil {
		return events.Session{}, mapStoreErr(err, "session")
	}
	ctx = background(ctx) // the rows are gone: finish even if the caller went away
	m.pipe.markDeleted(d.Runs)
	flag, _ := json.Marshal(events.RunFlag{Verb: events.VerbCancel, At: time.Now().UTC()})
	for _, run := range d.Unfinished {
		if _, err := m.flags.Put(ctx, run, flag); err != nil {
			m.log.Warn("cancel a deleted session's run", "run_id", run, "err", err)
		}
	}
	m.purgeBus(ctx, d.Tenant, d.Session, d.Runs)
	m.disp.admit.kick(d.Tenant) // its runs no longer count against the tenant's limit
	return s, nil
}

// lostRace reports a transaction that failed only because of another one (a
// serialization failure or a deadlock): trying again can succeed.
func lostRace(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "40")
}

// dropDeleted finishes what a writer found of deleted sessions in a batch:
// the events were not stored; their runs are forgotten and what the bus
// holds of them is purged (they may have arrived after the deletion's own
// purge).
func (p *pipeline) dropDeleted(ctx context.Context, gone []*write) {
	type session struct{ tenant, id string }
	runs := map[session][]string{}
	for _, w := range gone {
		k := session{w.tenant, w.sess}
		if !slices.Contains(runs[k], w.run) {
			runs[k] = append(runs[k], w.run)
		}
	}
	for s, rs := range runs {
		p.log.Info("events of a deleted session dropped", "session_id", s.id, "runs", len(rs))
		p.markDeleted(rs)
		p.bus.purgeBus(ctx, s.tenant, s.id, rs)
	}
}

// markDeleted records runs whose session was deleted: their events are
// acked and dropped unrouted, and housekeeping forgets their routes.
func (p *pipeline) markDeleted(runs []string) {
	p.deletedMu.Lock()
	defer p.deletedMu.Unlock()
	now := time.Now()
	for _, r := range runs {
		p.deleted[r] = now
	}
}

func (p *pipeline) isDeleted(run string) bool {
	p.deletedMu.Lock()
	defer p.deletedMu.Unlock()
	_, ok := p.deleted[run]
	return ok
}

// dropStale acks an event of a deleted run unrouted and leaves its subject
// to be purged: it arrived after the deletion purged the bus.
func (p *pipeline) dropStale(msg jetstream.Msg) {
	_ = msg.Ack()
	p.deletedMu.Lock()
	defer p.deletedMu.Unlock()
	p.stale[msg.Subject()] = true
}

// purgeStale purges the EVENTS subjects of deleted runs that received events
// since the last call.
func (p *pipeline) purgeStale(ctx context.Context) {
	p.deletedMu.Lock()
	subjects := make([]string, 0, len(p.stale))
	for s := range p.stale {
		subjects = append(subjects, s)
	}
	clear(p.stale)
	p.deletedMu.Unlock()
	if len(subjects) > 0 {
		p.bus.purge(ctx, events.StreamEvents, subjects)
	}
}
