package streammgr

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/eventlog"
	"clopen.dev/services/streammgr/internal/store"
)

// endpoints registers svc.streammgr.<op>, served by srv. Every handler
// scopes its queries by the caller's tenant; the gateway has already checked
// project membership.
func (m *Manager) endpoints(s micro.Service, srv *svc.Server) error {
	add := func(op string, h svc.Endpoint) error {
		subject, err := events.ServiceSubject(Name, op)
		if err != nil {
			return err
		}
		name := strings.ReplaceAll(op, ".", "_") // endpoint names have no dots; subjects do
		return s.AddEndpoint(name, srv.Bind(h), micro.WithEndpointSubject(subject), micro.WithEndpointQueueGroup(Name))
	}
	for op, h := range map[string]svc.Endpoint{
		events.OpStart: svc.Handler(m.internal, m.start),
		events.OpCancel: svc.Handler(m.internal, func(ctx context.Context, r events.RunControl) (events.ControlReply, error) {
			return m.stop(ctx, r, events.VerbCancel)
		}),
		events.OpInterrupt: svc.Handler(m.internal, func(ctx context.Context, r events.RunControl) (events.ControlReply, error) {
			return m.stop(ctx, r, events.VerbInterrupt)
		}),
		events.OpAnswer:         svc.Handler(m.internal, m.answer),
		events.OpSessionCreate:  svc.Handler(m.internal, m.createSession),
		events.OpSessionGet:     svc.Handler(m.internal, m.getSession),
		events.OpSessionList:    svc.Handler(m.internal, m.listSessions),
		events.OpSessionUpdate:  svc.Handler(m.internal, m.updateSession),
		events.OpSessionDelete:  svc.Handler(m.internal, m.deleteSession),
		events.OpCheckpoints:    svc.Handler(m.internal, m.checkpoints),
		events.OpSessionRestore: svc.Handler(m.internal, m.restore),
		events.OpMessagesList:   svc.Handler(m.internal, m.listMessages),
		events.OpRunsList:       svc.Handler(m.internal, m.listRuns),
		events.OpRunGet:         svc.Handler(m.internal, m.getRun),
		events.OpRunEvents:      svc.Handler(m.internal, m.runEvents),
		events.OpRunRetry:       svc.Handler(m.internal, m.retry),
		events.OpSnapshot:       svc.Handler(m.internal, m.snapshot),
		events.OpUsage:          svc.Handler(m.internal, m.usage),
		events.OpBudgets:        svc.Handler(m.internal, m.budgets),
		events.OpAuditList:      svc.Handler(m.internal, Audit.Serve(m.db)),
	} {
		if err := add(op, h); err != nil {
			return fmt.Errorf("endpoint %s: %w", op, err)
		}
	}
	return nil
}

func (m *Manager) createSession(ctx context.Context, req events.SessionCreate) (events.Session, error) {
	if _, err := uuid.Parse(req.ProjectID); err != nil {
		return events.Session{}, svc.Invalid("projectId: not a project id")
	}
	if req.Engine != "" {
		if _, err := events.ParseEngineType(string(req.Engine)); err != nil {
			return events.Session{}, svc.Invalid("engine: %v", err)
		}
	}
	if len(req.Title) > 500 {
		return events.Session{}, svc.Invalid("title: longer than 500 characters")
	}
	return store.CreateSession(ctx, m.db, req.TenantID, uuid.NewString(), req.UserID, req)
}

func (m *Manager) getSession(ctx context.Context, req events.SessionRef) (events.Session, error) {
	s, err := store.GetSession(ctx, m.db, req.TenantID, req.SessionID)
	return s, mapStoreErr(err, "session")
}

func (m *Manager) listSessions(ctx context.Context, req events.SessionList) ([]events.Session, error) {
	if len(req.Query) > events.MaxSessionQuery {
		return nil, svc.Invalid("query: longer than %d bytes", events.MaxSessionQuery)
	}
	s, err := store.ListSessions(ctx, m.db, req.TenantID, req.ProjectID, req.Query, req.Limit)
	return s, mapStoreErr(err, "project")
}

func (m *Manager) updateSession(ctx context.Context, req events.SessionUpdate) (events.Session, error) {
	if req.Engine != nil {
		if _, err := events.ParseEngineType(string(*req.Engine)); err != nil {
			return events.Session{}, svc.Invalid("engine: %v", err)
		}
	}
	s, err := store.UpdateSession(ctx, m.db, req.TenantID, req)
	return s, mapStoreErr(err, "session")
}

func (m *Manager) listMessages(ctx context.Context, req events.MessageList) ([]events.MessageRow, error) {
	if _, err := store.GetSession(ctx, m.db, req.TenantID, req.SessionID); err != nil {
		return nil, mapStoreErr(err, "session")
	}
	rows, err := store.ListMessages(ctx, m.db, req.TenantID, req.SessionID, req.AfterRow, req.Limit)
	return rows, mapStoreErr(err, "message")
}

func (m *Manager) listRuns(ctx context.Context, req events.RunList) ([]events.Run, error) {
	if _, err := store.GetSession(ctx, m.db, req.TenantID, req.SessionID); err != nil {
		return nil, mapStoreErr(err, "session")
	}
	rows, err := store.ListRuns(ctx, m.db, req.TenantID, req.SessionID, req.Limit)
	if err != nil {
		return nil, mapStoreErr(err, "session")
	}
	out := make([]events.Run, 0, len(rows))
	for _, r := range rows {
		pub, err := store.Public(ctx, m.db, r)
		if err != nil {
			return nil, err
		}
		out = append(out, pub)
	}
	return out, nil
}

func (m *Manager) getRun(ctx context.Context, req events.RunRef) (events.Run, error) {
	r, err := store.TenantRun(ctx, m.db, req.TenantID, req.RunID)
	if err != nil {
		return events.Run{}, mapStoreErr(err, "run")
	}
	return store.Public(ctx, m.db, r)
}

func (m *Manager) runEvents(ctx context.Context, req events.RunEvents) ([]events.StoredEvent, error) {
	if _, err := store.TenantRun(ctx, m.db, req.TenantID, req.RunID); err != nil {
		return nil, mapStoreErr(err, "run")
	}
	evs, err := eventlog.Read(ctx, m.db, eventlog.Key{Run: req.RunID, Epoch: int64(req.AfterEpoch), Seq: int64(req.AfterSeq)}, req.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]events.StoredEvent, len(evs))
	for i, ev := range evs {
		out[i] = events.StoredEvent{Epoch: uint64(ev.Epoch), Seq: uint64(ev.Seq), Type: ev.Type, Output: ev.Payload, CreatedAt: ev.CreatedAt}
	}
	return out, nil
}

// snapshot is what a (re)joining client starts from. Messages, the active
// run and the cursor are read in one transaction, so they agree: the cursor
// is the CHAT sequence up to which the messages are committed, and the
// partial text is rebuilt from the event log committed with them. Frames
// after the cursor continue it exactly.
func (m *Manager) snapshot(ctx context.Context, req events.SessionRef) (events.Snapshot, error) {
	tx, err := m.db.Begin(ctx)
	if err != nil {
		return events.Snapshot{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return events.Snapshot{}, err
	}
	s, err := store.GetSession(ctx, tx, req.TenantID, req.SessionID)
	if err != nil {
		return events.Snapshot{}, mapStoreErr(err, "session")
	}
	snap := events.Snapshot{Session: s, Messages: []events.MessageRow{}}
	for after := ""; ; {
		page, err := store.ListMessages(ctx, tx, req.TenantID, s.ID, after, 1000)
		if err != nil {
			return events.Snapshot{}, err
		}
		snap.Messages = append(snap.Messages, page...)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].RowID
	}
	if snap.Cursor, err = store.ChatCursor(ctx, tx, s.ID); err != nil {
		return events.Snapshot{}, err
	}
	if s.ActiveRunID != "" {
		r, err := store.TenantRun(ctx, tx, req.TenantID, s.ActiveRunID)
		if err == nil {
			pub, err := store.Public(ctx, tx, r)
			if err != nil {
				return events.Snapshot{}, err
			}
			snap.ActiveRun = &pub
			partial, err := partialsSince(ctx, tx, r.ID)
			if err != nil {
				return events.Snapshot{}, err
			}
			snap.PartialText, snap.PartialReasoning = partial.Text(), partial.Reasoning()
		}
	}
	return snap, nil
}

// maxUsageRange bounds one usage query: a year of runs.
const maxUsageRange = 366 * 24 * time.Hour

func (m *Manager) usage(ctx context.Context, req events.UsageRequest) (events.UsageReply, error) {
	switch {
	case req.From.IsZero() || req.To.IsZero():
		return events.UsageReply{}, svc.Invalid("from and to: both are required")
	case !req.From.Before(req.To):
		return events.UsageReply{}, svc.Invalid("from: must be before to")
	case req.To.Sub(req.From) > maxUsageRange:
		return events.UsageReply{}, svc.Invalid("from, to: at most 366 days apart")
	}
	for i, g := range req.GroupBy {
		if !slices.Contains(events.UsageGroups, g) {
			return events.UsageReply{}, svc.Invalid("groupBy %q: want one of %s", g, strings.Join(events.UsageGroups, ", "))
		}
		if slices.Contains(req.GroupBy[:i], g) {
			return events.UsageReply{}, svc.Invalid("groupBy %q: named twice", g)
		}
	}
	for name, id := range map[string]string{"projectId": req.ProjectID, "onlyUser": req.OnlyUser} {
		if _, err := uuid.Parse(id); id != "" && err != nil {
			return events.UsageReply{}, svc.Invalid("%s: not an id", name)
		}
	}
	rows, err := store.Usage(ctx, m.db, req.TenantID, req)
	if err != nil {
		return events.UsageReply{}, err
	}
	return events.UsageReply{From: req.From, To: req.To, GroupBy: append([]string{}, req.GroupBy...), Rows: rows}, nil
}
