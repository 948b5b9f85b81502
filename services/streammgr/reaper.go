package streammgr

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/store"
)

// reap watches run_owner. A lease that expires (its worker died or lost its
// connection) gets a "lost" event injected on the run's subject: the router
// drops it if the run's terminal event came first, and otherwise the run
// becomes lost, its clients are told, and its session moves on. A periodic sweep covers leases that
// vanished while no streammgr was watching, and jobs whose publication
// failed.
func (m *Manager) reap(ctx context.Context) error {
	w, err := m.owners.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		return fmt.Errorf("watch leases: %w", err)
	}
	defer func() { _ = w.Stop() }()
	sweep := time.NewTicker(m.cfg.SweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("lease watch closed")
			}
			if e == nil {
				continue // the initial values are complete
			}
			// A worker deletes its lease only after its terminal event is
			// stored; an expired lease (a dead worker) shows up as a purge.
			if e.Operation() == jetstream.KeyValuePurge {
				m.leaseGone(ctx, e.Key())
			}
		case <-sweep.C:
			m.sweep(ctx)
		}
	}
}

// leaseGone injects the lost event for a run whose lease vanished, unless
// the run has already ended.
func (m *Manager) leaseGone(ctx context.Context, run string) {
	r, err := store.LoadRun(ctx, m.db, run)
	if err != nil || r.State.Terminal() {
		return
	}
	lost := events.RunState{State: events.RunLost, Reason: "lease expired", ErrorKind: events.KindCrashed,
		Error: "the worker running this turn stopped responding"}
	id := fmt.Sprintf("sm:%s:lost:%d", run, r.Epoch)
	if err := m.inject(ctx, r.Tenant, r.SessionID, r.ID, lost, id); err != nil {
		m.log.ErrorContext(ctx, "inject lost event", "run_id", run, "err", err)
		return
	}
	runsLost.Add(ctx, 1)
}

// sweep checks unfinished runs against their leases: a claimed run without a
// lease (it vanished while nobody watched) is lost; a dispatched run nobody
// claimed within a while gets its job published again (same Msg-Id within
// the dedupe window; workers drop copies of ended runs).
func (m *Manager) sweep(ctx context.Context) {
	runs, err := store.Unfinished(ctx, m.db)
	if err != nil {
		m.log.WarnContext(ctx, "sweep", "err", err)
		return
	}
	for _, r := range runs {
		switch {
		case r.ClaimedAt != nil && time.Since(*r.ClaimedAt) > m.cfg.LeaseGrace:
			if _, err := m.owners.Get(ctx, r.ID); err == jetstream.ErrKeyNotFound {
				m.leaseGone(ctx, r.ID)
			}
		case r.ClaimedAt == nil && r.DispatchedAt != nil && time.Since(*r.DispatchedAt) > m.cfg.RepublishAfter:
			if _, err := m.owners.Get(ctx, r.ID); err == jetstream.ErrKeyNotFound {
				if err := m.publishJob(ctx, r.Job); err != nil {
					m.log.WarnContext(ctx, "republish job", "run_id", r.ID, "err", err)
				}
			}
		}
	}
}
