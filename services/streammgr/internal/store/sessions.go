package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
)

const sessionColumns = `id::text, project_id::text, title, engine, provider, model_id, account_id,
	coalesce(reasoning_effort, ''), coalesce(profile_id, ''), coalesce(head_session_id, ''),
	coalesce(head_message_id::text, ''), head_title, head_summary, message_count, user_count, last_message_at,
	coalesce(active_run_id::text, ''), coalesce(created_by::text, ''), created_at, updated_at,
	(SELECT count(*) FROM streammgr.runs q WHERE q.session_id = s.id AND q.state = 'queued' AND q.dispatched_at IS NULL)`

func scanSession(row pgx.Row) (events.Session, error) {
	var s events.Session
	var engine string
	err := row.Scan(&s.ID, &s.ProjectID, &s.Title, &engine, &s.Provider, &s.Model, &s.AccountID, &s.Effort, &s.ProfileID,
		&s.HeadSessionID, &s.HeadMessageID, &s.HeadTitle, &s.HeadSummary, &s.MessageCount, &s.UserCount, &s.LastMessageAt,
		&s.ActiveRunID, &s.CreatedBy, &s.CreatedAt, &s.UpdatedAt, &s.QueuedRunsCount)
	s.Engine = events.EngineType(engine)
	return s, notFound(err)
}

// CreateSession inserts a session for tenant and returns it.
func CreateSession(ctx context.Context, db DB, tenant, id, createdBy string, in events.SessionCreate) (events.Session, error) {
	engine := in.Engine
	if engine == "" {
		engine = events.EngineScripted
	}
	_, err := db.Exec(ctx, `INSERT INTO streammgr.chat_sessions
		(id, tenant_id, project_id, title, engine, model_id, reasoning_effort, profile_id, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''), nullif($8, ''), nullif($9, '')::uuid)`,
		id, tenant, in.ProjectID, in.Title, string(engine), in.Model, in.Effort, in.ProfileID, createdBy)
	if err != nil {
		return events.Session{}, fmt.Errorf("create session: %w", err)
	}
	return GetSession(ctx, db, tenant, id)
}

// GetSession returns one session of tenant.
func GetSession(ctx context.Context, db DB, tenant, id string) (events.Session, error) {
	if !isUUID(id) {
		return events.Session{}, ErrNotFound
	}
	return scanSession(db.QueryRow(ctx, `SELECT `+sessionColumns+` FROM streammgr.chat_sessions s
		WHERE s.id = $1 AND s.tenant_id = $2`, id, tenant))
}

// ListSessions returns a project's sessions, newest first.
func ListSessions(ctx context.Context, db DB, tenant, project string, limit int) ([]events.Session, error) {
	if !isUUID(project) {
		return nil, ErrNotFound
	}
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	rows, err := db.Query(ctx, `SELECT `+sessionColumns+` FROM streammgr.chat_sessions s
		WHERE s.tenant_id = $1 AND s.project_id = $2 ORDER BY s.created_at DESC LIMIT $3`, tenant, project, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	out := []events.Session{}
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// UpdateSession applies the non-nil fields of u.
func UpdateSession(ctx context.Context, db DB, tenant string, u events.SessionUpdate) (events.Session, error) {
	if !isUUID(u.SessionID) {
		return events.Session{}, ErrNotFound
	}
	var engine *string
	if u.Engine != nil {
		e := string(*u.Engine)
		engine = &e
	}
	tag, err := db.Exec(ctx, `UPDATE streammgr.chat_sessions SET
		title = coalesce($3, title), engine = coalesce($4, engine), model_id = coalesce($5, model_id),
		reasoning_effort = CASE WHEN $6::text IS NULL THEN reasoning_effort ELSE nullif($6, '') END,
		profile_id = CASE WHEN $7::text IS NULL THEN profile_id ELSE nullif($7, '') END,
		updated_at = now()
		WHERE id = $1 AND tenant_id = $2`, u.SessionID, tenant, u.Title, engine, u.Model, u.Effort, u.ProfileID)
	if err != nil {
		return events.Session{}, fmt.Errorf("update session: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return events.Session{}, ErrNotFound
	}
	return GetSession(ctx, db, tenant, u.SessionID)
}

// DeleteSession removes a session with its runs and messages. The event log
// keeps the runs' events until they are purged by run id.
func DeleteSession(ctx context.Context, db DB, tenant, id string) error {
	if !isUUID(id) {
		return ErrNotFound
	}
	tag, err := db.Exec(ctx, `DELETE FROM streammgr.chat_sessions WHERE id = $1 AND tenant_id = $2`, id, tenant)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Locked is a session row held FOR UPDATE inside a start or dispatch
// transaction, so sends to one session serialise.
type Locked struct {
	ID, Tenant, Project, Engine, Provider, Model, AccountID, AccountName, ModelName string
	Effort, Profile, HeadSessionID, HeadMessageID, ActiveRunID, Title               string
}

// LockSession selects a session FOR UPDATE.
func LockSession(ctx context.Context, tx pgx.Tx, tenant, id string) (Locked, error) {
	if !isUUID(id) {
		return Locked{}, ErrNotFound
	}
	var l Locked
	err := tx.QueryRow(ctx, `SELECT id::text, tenant_id::text, project_id::text, engine, provider, model_id, account_id,
		account_name, model_name, coalesce(reasoning_effort, ''), coalesce(profile_id, ''), coalesce(head_session_id, ''),
		coalesce(head_message_id::text, ''), coalesce(active_run_id::text, ''), title
		FROM streammgr.chat_sessions WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, id, tenant).Scan(
		&l.ID, &l.Tenant, &l.Project, &l.Engine, &l.Provider, &l.Model, &l.AccountID, &l.AccountName, &l.ModelName,
		&l.Effort, &l.Profile, &l.HeadSessionID, &l.HeadMessageID, &l.ActiveRunID, &l.Title)
	return l, notFound(err)
}

// SaveSelection persists the engine selection a turn runs with.
func SaveSelection(ctx context.Context, tx pgx.Tx, l Locked) error {
	_, err := tx.Exec(ctx, `UPDATE streammgr.chat_sessions SET engine = $2, provider = $3, model_id = $4,
		account_id = $5, reasoning_effort = nullif($6, ''), profile_id = nullif($7, ''), updated_at = now() WHERE id = $1`,
		l.ID, l.Engine, l.Provider, l.Model, l.AccountID, l.Effort, l.Profile)
	return err
}

// SetActiveRun marks run as the session's active run ("" clears it).
func SetActiveRun(ctx context.Context, tx pgx.Tx, session, run string) error {
	_, err := tx.Exec(ctx, `UPDATE streammgr.chat_sessions SET active_run_id = nullif($2, '')::uuid, updated_at = now()
		WHERE id = $1`, session, run)
	return err
}

// ChatCursor returns the CHAT sequence up to which the session's projections
// are committed.
func ChatCursor(ctx context.Context, db DB, session string) (uint64, error) {
	var c int64
	err := db.QueryRow(ctx, `SELECT chat_cursor FROM streammgr.chat_sessions WHERE id = $1`, session).Scan(&c)
	return uint64(c), notFound(err)
}
