package streammgr

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// controlTimeout bounds a request to the owning worker.
const controlTimeout = 3 * time.Second

// target finds the run a control request names: the given run of the
// session, or the session's active run.
func (m *Manager) target(ctx context.Context, c events.Caller, session, run string) (store.RunRow, error) {
	if run == "" {
		s, err := store.GetSession(ctx, m.db, c.TenantID, session)
		if err != nil {
			return store.RunRow{}, mapStoreErr(err, "session")
		}
		if s.ActiveRunID == "" {
			return store.RunRow{}, svc.Conflict("session %s has no active run", session)
		}
		run = s.ActiveRunID
	}
	r, err := store.TenantRun(ctx, m.db, c.TenantID, run)
	if err != nil {
		return store.RunRow{}, mapStoreErr(err, "run")
	}
	if session != "" && r.SessionID != session {
		return store.RunRow{}, svc.NotFound("run not found")
	}
	return r, nil
}

// stop cancels or interrupts a run. A run still waiting behind the session's
// active run is cancelled in place. Otherwise the request goes to the worker
// that owns the run; when no worker answers (none owns it yet, or its owner
// died), the durable run_ctl flag makes the next claimant obey, and a
// cancel ends the run now.
func (m *Manager) stop(ctx context.Context, req events.RunControl, verb string) (events.ControlReply, error) {
	r, err := m.target(ctx, req.Caller, req.SessionID, req.RunID)
	if err != nil {
		return events.ControlReply{}, err
	}
	if r.State.Terminal() {
		return events.ControlReply{State: r.State, Error: "run already ended"}, nil
	}
	if r.DispatchedAt == nil {
		if verb == events.VerbInterrupt {
			return events.ControlReply{State: r.State, Error: "run has not started; cancel it instead"}, nil
		}
		return m.cancelQueued(ctx, r)
	}
	return m.halt(ctx, r, verb, events.ControlRequest{Tenant: r.Tenant, RunID: r.ID, RequestedBy: req.UserID},
		events.RunState{State: events.RunCancelled, Reason: "cancelled by user"})
}

// halt sends a dispatched run's owner the control request req; when no
// worker answers, it leaves the durable flag and, for a cancel, ends the run
// with end (published as the run's own event).
func (m *Manager) halt(ctx context.Context, r store.RunRow, verb string, req events.ControlRequest, end events.RunState) (events.ControlReply, error) {
	reply, err := m.ask(ctx, r, verb, req)
	if err == nil {
		return reply, nil
	}
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		return events.ControlReply{}, err
	}
	// Nobody owns the run right now: leave a durable flag, and end it.
	flag, _ := json.Marshal(events.RunFlag{Verb: verb, At: time.Now().UTC(), Reason: req.Reason, Error: req.Error})
	if _, ferr := m.flags.Put(ctx, r.ID, flag); ferr != nil {
		return events.ControlReply{}, ferr
	}
	if verb == events.VerbInterrupt {
		return events.ControlReply{Accepted: true, State: r.State}, nil
	}
	id := "sm:" + r.ID + ":cancel"
	if req.Reason != "" {
		id += ":" + req.Reason
	}
	if err := m.inject(ctx, r.Tenant, r.SessionID, r.ID, end, id); err != nil {
		return events.ControlReply{}, err
	}
	return events.ControlReply{Accepted: true, State: events.RunCancelling}, nil
}

// ask sends an addressed control request to the run's owner.
func (m *Manager) ask(ctx context.Context, r store.RunRow, verb string, req events.ControlRequest) (events.ControlReply, error) {
	subject, err := events.ControlSubject(r.ID, verb)
	if err != nil {
		return events.ControlReply{}, err
	}
	body, _ := json.Marshal(req)
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	msg, err := m.nc.RequestWithContext(cctx, subject, body)
	if err != nil {
		return events.ControlReply{}, err
	}
	var reply events.ControlReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return events.ControlReply{}, err
	}
	if !reply.Accepted && reply.Error != "" && reply.State == "" {
		// The worker does not hold the run (it just ended there): same as no owner.
		return events.ControlReply{}, nats.ErrNoResponders
	}
	return reply, nil
}

// cancelQueued cancels a run that was never dispatched: one waiting behind
// the session's active run, or one held for its tenant's admission (then
// the session moves on to its next turn, as when a run ends).
func (m *Manager) cancelQueued(ctx context.Context, r store.RunRow) (events.ControlReply, error) {
	now := time.Now().UTC()
	var cancelled bool
	err := pgx.BeginFunc(ctx, m.db, func(tx pgx.Tx) error {
		l, err := store.LockSession(ctx, tx, r.Tenant, r.SessionID)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE streammgr.runs SET state = 'cancelled', ended_at = greatest($2::timestamptz, queued_at)
			WHERE id = $1 AND state = 'queued' AND dispatched_at IS NULL`, r.ID, now)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		cancelled = true
		if l.ActiveRunID != r.ID {
			return nil
		}
		return m.disp.releaseLocked(ctx, tx, r.Tenant, r.SessionID, r.ID)
	})
	if err != nil {
		return events.ControlReply{}, mapStoreErr(err, "session")
	}
	if !cancelled {
		return events.ControlReply{State: r.State, Error: "run started meanwhile; cancel again"}, nil
	}
	m.disp.admit.kick(r.Tenant)
	m.publishChat(ctx, r.Tenant, []events.ChatEvent{{Type: events.ChatTypeRunState, ChatSessionID: r.SessionID,
		ProjectID: r.ProjectID, RunID: r.ID, Timestamp: now,
		Data: events.ChatRunState{State: events.RunCancelled, Reason: "cancelled before it started"}}})
	runsEnded.Add(ctx, 1)
	return events.ControlReply{Accepted: true, State: events.RunCancelled}, nil
}

// answer delivers an answer to the owning worker. A stale or foreign tool
// use id is refused by the worker, loudly.
func (m *Manager) answer(ctx context.Context, req events.AnswerRequest) (events.ControlReply, error) {
	if req.ToolUseID == "" {
		return events.ControlReply{}, svc.Invalid("toolUseId: required")
	}
	if len(req.Answers) == 0 && req.Decision == "" {
		return events.ControlReply{}, svc.Invalid("answer with answers (a question) or decision allow|deny (a permission prompt)")
	}
	if req.Decision != "" && req.Decision != events.DecisionAllow && req.Decision != events.DecisionDeny {
		return events.ControlReply{}, svc.Invalid("decision: want allow or deny, got %q", req.Decision)
	}
	r, err := m.target(ctx, req.Caller, req.SessionID, req.RunID)
	if err != nil {
		return events.ControlReply{}, err
	}
	// The committed state lags the live events by up to a batch, so only a
	// run known to have ended is refused here; the owning worker knows
	// which questions are parked and refuses anything else.
	if r.State.Terminal() {
		return events.ControlReply{}, svc.Conflict("run %s already ended (%s)", r.ID, r.State)
	}
	reply, err := m.ask(ctx, r, events.VerbAnswer, events.ControlRequest{Tenant: r.Tenant, RunID: r.ID, RequestedBy: req.UserID,
		ToolUseID: req.ToolUseID, Answers: req.Answers, Decision: req.Decision, Message: req.Message})
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		// Nobody took it: the run ended on its worker as the answer went
		// out (its control subscription was going), or its worker is gone.
		return events.ControlReply{}, svc.Conflict("run %s has no live worker to answer", r.ID)
	}
	if err != nil {
		return events.ControlReply{}, err
	}
	if !reply.Accepted {
		return events.ControlReply{}, svc.Conflict("%s", reply.Error)
	}
	return reply, nil
}
