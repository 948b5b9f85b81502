package streammgr

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// retry starts a lost run again as a new run of its session: the lost
// turn's prompt and engine selection, from the snapshot the lost turn
// started from (dispatchLocked). The retry's user message is a sibling of
// the lost one, under the same parent, and becomes HEAD; the lost turn stays
// on its own branch. A lost run has one retry: asking again returns it. Like
// a send, the retry waits behind the session's active run or for its
// tenant's admission.
func (m *Manager) retry(ctx context.Context, req events.RunRef) (events.StartTurnReply, error) {
	lost, err := store.TenantRun(ctx, m.db, req.TenantID, req.RunID)
	if err != nil {
		return events.StartTurnReply{}, mapStoreErr(err, "run")
	}
	offeredErr := m.checkEngineOffered(ctx, lost.Engine) // refuses a new retry, not the one made
	var reply events.StartTurnReply
	var after placement
	err = pgx.BeginFunc(ctx, m.db, func(tx pgx.Tx) error {
		if err := store.LockTenant(ctx, tx, lost.Tenant); err != nil {
			return err
		}
		l, err := store.LockSession(ctx, tx, lost.Tenant, lost.SessionID)
		if err != nil {
			return err
		}
		prev, found, err := store.RetryOf(ctx, tx, lost.ID)
		if err != nil || found {
			reply = events.StartTurnReply{RunID: prev.ID, Queued: prev.DispatchedAt == nil, UserMessageRowID: prev.UserMessageID}
			return err
		}
		if offeredErr != nil {
			return offeredErr
		}
		run, _, err := insertRetry(ctx, tx, lost.Tenant, lost.ID)
		if err != nil {
			return err
		}
		adm, err := m.disp.decide(ctx, tx, l.Tenant, l.ActiveRunID != "")
		if err != nil {
			return err
		}
		reply = events.StartTurnReply{RunID: run.ID}
		after, err = m.placeLocked(ctx, tx, l, run, adm, &reply, func() ([]events.Block, error) {
			return nil, nil // the dispatch takes the lost turn's
		})
		return err
	})
	if err != nil {
		return events.StartTurnReply{}, mapStoreErr(err, "run")
	}
	after.run(ctx, m)
	return reply, nil
}

// insertRetry records the retry of run lost (of tenant) as a queued run, or
// returns the retry already made (made false). Only a lost run is retried;
// the caller holds the session's lock, so two retries of one run serialise
// (and the unique retry_of index would refuse a second one anyway).
func insertRetry(ctx context.Context, tx pgx.Tx, tenant, lostID string) (run store.RunRow, made bool, err error) {
	prev, found, err := store.RetryOf(ctx, tx, lostID)
	if err != nil || found {
		return prev, false, err
	}
	lost, err := store.TenantRun(ctx, tx, tenant, lostID)
	if err != nil {
		return store.RunRow{}, false, err
	}
	if lost.State != events.RunLost {
		return store.RunRow{}, false, svc.Conflict("run %s is %s: only a lost run can be retried", lost.ID, lost.State)
	}
	if lost.UserMessageID == "" {
		return store.RunRow{}, false, svc.Conflict("run %s was lost before it started: send its prompt again", lost.ID)
	}
	j := lost.Job
	run = store.RunRow{ID: uuid.NewString(), Tenant: lost.Tenant, SessionID: lost.SessionID, ProjectID: lost.ProjectID,
		State: events.RunQueued, Engine: lost.Engine, Model: lost.Model, Effort: lost.Effort, Profile: lost.Profile,
		RequestedBy: lost.RequestedBy, SenderName: lost.SenderName, RetryOf: lost.ID, QueuedAt: time.Now().UTC(),
		Job: events.Job{Tenant: j.Tenant, SessionID: j.SessionID, ProjectID: j.ProjectID, Engine: j.Engine, Model: j.Model,
			Provider: j.Provider, AccountID: j.AccountID, Effort: j.Effort, ProfileID: j.ProfileID, Prompt: j.Prompt,
			RequestedBy: j.RequestedBy, Snapshot: j.Snapshot}}
	run.Job.RunID, run.Job.QueuedAt = run.ID, run.QueuedAt
	run.Job.TraceParent = traceParent(ctx)
	if err := store.InsertRun(ctx, tx, run); err != nil {
		return store.RunRow{}, false, err
	}
	return run, true, nil
}
