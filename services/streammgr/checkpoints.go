package streammgr

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bytesize"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// checkpointDepth bounds how many messages a checkpoint listing walks back
// from HEAD, the same bound a turn's resume and snapshot lookups use.
const checkpointDepth = 500

// checkpoints lists the turns on the session's HEAD, oldest first, each with
// the snapshot it left: what a restore or a fork can go back to.
func (m *Manager) checkpoints(ctx context.Context, req events.SessionRef) ([]events.Checkpoint, error) {
	s, err := store.GetSession(ctx, m.db, req.TenantID, req.SessionID)
	if err != nil {
		return nil, mapStoreErr(err, "session")
	}
	return store.Checkpoints(ctx, m.db, s.ID, s.HeadMessageID, checkpointDepth)
}

// restore moves the session's HEAD to one of its messages, so the next turn
// continues from there: the engine resumes the conversation as it stood
// after that message, and the turn starts from the files the message's turn
// left. Refused while a turn runs, since that turn's messages would land on
// the old branch.
func (m *Manager) restore(ctx context.Context, req events.SessionRestore) (events.Session, error) {
	err := pgx.BeginFunc(ctx, m.db, func(tx pgx.Tx) error {
		l, err := store.LockSession(ctx, tx, req.TenantID, req.SessionID)
		if err != nil {
			return err
		}
		if l.ActiveRunID != "" {
			return svc.Conflict("session %s has a turn running (run %s); restore it once the turn ends", l.ID, l.ActiveRunID)
		}
		return store.SetHead(ctx, tx, l, req.MessageID)
	})
	if err != nil {
		return events.Session{}, mapStoreErr(err, "session")
	}
	s, err := store.GetSession(ctx, m.db, req.TenantID, req.SessionID)
	if err != nil {
		return s, mapStoreErr(err, "session")
	}
	m.disp.bus.publishChat(background(ctx), req.TenantID, []events.ChatEvent{{Type: events.ChatTypeMessagesChanged,
		ChatSessionID: s.ID, ProjectID: s.ProjectID, Timestamp: time.Now().UTC(),
		Data: events.ChatMessagesChanged{Reason: "restored"}}})
	return s, nil
}

// LiveSnapshots adds to live the snapshots tenant's sessions still need:
// every run's (each turn is a checkpoint), the one each run started from,
// and each session's base. A snapshot garbage collection keeps these.
func LiveSnapshots(ctx context.Context, db *pgxpool.Pool, tenant string, live map[string]bool) error {
	return store.LiveSnapshots(ctx, db, tenant, live)
}

// checkWorkspaceQuota refuses a new turn of a tenant whose sessions already
// hold its quota of files (their newest snapshots, summed).
func (m *Manager) checkWorkspaceQuota(ctx context.Context, db store.DB, tenant string) error {
	quota := m.cfg.TenantWorkspaceQuota
	if quota <= 0 {
		return nil
	}
	used, err := store.TenantWorkspaceBytes(ctx, db, tenant)
	if err != nil {
		return err
	}
	if used < quota {
		return nil
	}
	return svc.Errorf(http.StatusInsufficientStorage, "workspace_quota",
		"the tenant's chat sessions hold %s of files, its quota is %s: delete sessions (or ask an operator for more) to start new turns",
		bytesize.Format(used), bytesize.Format(quota))
}
