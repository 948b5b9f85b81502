package store

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/eventlog"
)

const sessionColumns = `id::text, project_id::text, title, engine, provider, model_id, account_id,
	coalesce(reasoning_effort, ''), coalesce(profile_id, ''), coalesce(head_session_id, ''),
	coalesce(head_message_id::text, ''), head_title, head_summary, message_count, user_count, last_message_at,
	coalesce(active_run_id::text, ''), coalesce(created_by::text, ''), created_at, updated_at,
	(SELECT count(*) FROM streammgr.runs q WHERE q.session_id = s.id AND q.state = 'queued' AND q.dispatched_at IS NULL),
	coalesce(base_snapshot_id, '')`

func scanSession(row pgx.Row) (events.Session, error) {
	var s events.Session
	var engine string
	err := row.Scan(&s.ID, &s.ProjectID, &s.Title, &engine, &s.Provider, &s.Model, &s.AccountID, &s.Effort, &s.ProfileID,
		&s.HeadSessionID, &s.HeadMessageID, &s.HeadTitle, &s.HeadSummary, &s.MessageCount, &s.UserCount, &s.LastMessageAt,
		&s.ActiveRunID, &s.CreatedBy, &s.CreatedAt, &s.UpdatedAt, &s.QueuedRunsCount, &s.BaseSnapshot)
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
		(id, tenant_id, project_id, title, engine, model_id, reasoning_effort, profile_id, created_by, base_snapshot_id)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''), nullif($8, ''), nullif($9, '')::uuid, nullif($10, ''))`,
		id, tenant, in.ProjectID, in.Title, string(engine), in.Model, in.Effort, in.ProfileID, createdBy, in.BaseSnapshot)
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
	s, err := scanSession(db.QueryRow(ctx, `SELECT `+sessionColumns+` FROM streammgr.chat_sessions s
		WHERE s.id = $1 AND s.tenant_id = $2`, id, tenant))
	if err != nil {
		return s, err
	}
	if s.HeadSnapshot, err = HeadSnapshot(ctx, db, s.HeadMessageID, 500); err != nil {
		return s, err
	}
	s.HeadSnapshot = cmp.Or(s.HeadSnapshot, s.BaseSnapshot)
	return s, nil
}

// ListSessions returns a project's sessions, newest first; with a query,
// those whose title or head title contains it (case-insensitive, taken
// literally: % and _ match themselves).
func ListSessions(ctx context.Context, db DB, tenant, project, query string, limit int) ([]events.Session, error) {
	if !isUUID(project) {
		return nil, ErrNotFound
	}
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	pattern := ""
	if query != "" {
		pattern = "%" + likeEscaper.Replace(query) + "%"
	}
	rows, err := db.Query(ctx, `SELECT `+sessionColumns+` FROM streammgr.chat_sessions s
		WHERE s.tenant_id = $1 AND s.project_id = $2
		AND ($4 = '' OR s.title ILIKE $4 ESCAPE '\' OR s.head_title ILIKE $4 ESCAPE '\')
		ORDER BY s.created_at DESC LIMIT $3`, tenant, project, limit, pattern)
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

// likeEscaper quotes LIKE's wildcards and its escape character.
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

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

// Deleted is what a session's deletion removed that lives on outside
// Postgres: the EVENTS subjects of its runs, and the runs a worker may still
// be running.
type Deleted struct {
	Tenant, Session string
	Runs            []string // every run of the session
	Unfinished      []string // dispatched runs that had not ended
}

// DeleteSession removes a session of tenant and everything it owns — its
// runs, their event log and set-aside events, its messages — in the caller's
// transaction. It locks the session row first, as every transaction that
// writes a session's rows does (start, dispatch, the event writer), so a
// deletion waits for a commit in progress instead of deadlocking with it,
// and a writer that comes after finds the session gone.
func DeleteSession(ctx context.Context, tx pgx.Tx, tenant, id string) (Deleted, error) {
	if _, err := LockSession(ctx, tx, tenant, id); err != nil {
		return Deleted{}, err
	}
	d := Deleted{Tenant: tenant, Session: id}
	rows, err := tx.Query(ctx, `SELECT id::text, state, dispatched_at IS NOT NULL FROM streammgr.runs
		WHERE session_id = $1 ORDER BY queued_at, id`, id)
	if err != nil {
		return Deleted{}, fmt.Errorf("delete session: list runs: %w", err)
	}
	var run, state string
	var dispatched bool
	_, err = pgx.ForEachRow(rows, []any{&run, &state, &dispatched}, func() error {
		d.Runs = append(d.Runs, run)
		if dispatched && !events.RunStateName(state).Terminal() {
			d.Unfinished = append(d.Unfinished, run)
		}
		return nil
	})
	if err != nil {
		return Deleted{}, fmt.Errorf("delete session: list runs: %w", err)
	}
	// What its running turns spent stays spent: deleting runs gives no
	// budget back (the ended ones are in the ledger already).
	if err := SettleSpend(ctx, tx, d.Unfinished); err != nil {
		return Deleted{}, fmt.Errorf("delete session: %w", err)
	}
	if err := eventlog.DeleteRuns(ctx, tx, d.Runs); err != nil {
		return Deleted{}, fmt.Errorf("delete session: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM streammgr.dead_events WHERE session_id = $1`, id)
	b.Queue(`DELETE FROM streammgr.messages WHERE session_id = $1`, id)
	b.Queue(`DELETE FROM streammgr.runs WHERE session_id = $1`, id)
	b.Queue(`DELETE FROM streammgr.chat_sessions WHERE id = $1`, id)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return Deleted{}, fmt.Errorf("delete session: %w", err)
	}
	return d, nil
}

// LockSessions locks the rows of the sessions named FOR UPDATE, in id order
// (so transactions locking several never deadlock with each other), and
// returns those that exist: a session missing here was deleted, and its
// events have nowhere to go.
func LockSessions(ctx context.Context, tx pgx.Tx, ids []string) (map[string]bool, error) {
	live := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return live, nil
	}
	rows, err := tx.Query(ctx, `SELECT id::text FROM streammgr.chat_sessions WHERE id = ANY($1::uuid[])
		ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return nil, fmt.Errorf("lock sessions: %w", err)
	}
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		live[id] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("lock sessions: %w", err)
	}
	return live, nil
}

// Locked is a session row held FOR UPDATE inside a start or dispatch
// transaction, so sends to one session serialise.
type Locked struct {
	ID, Tenant, Project, Engine, Provider, Model, AccountID, AccountName, ModelName string
	Effort, Profile, HeadSessionID, HeadMessageID, ActiveRunID, Title               string
	BaseSnapshot                                                                    string // the snapshot a first turn starts from
}

// LockSession selects a session FOR UPDATE.
func LockSession(ctx context.Context, tx pgx.Tx, tenant, id string) (Locked, error) {
	return readSession(ctx, tx, tenant, id, " FOR UPDATE")
}

// PeekSession reads what LockSession does without locking the row: what a
// turn is prepared from before its transaction locks the session and checks
// that nothing it relied on changed.
func PeekSession(ctx context.Context, db DB, tenant, id string) (Locked, error) {
	return readSession(ctx, db, tenant, id, "")
}

func readSession(ctx context.Context, db DB, tenant, id, lock string) (Locked, error) {
	if !isUUID(id) {
		return Locked{}, ErrNotFound
	}
	var l Locked
	err := db.QueryRow(ctx, `SELECT id::text, tenant_id::text, project_id::text, engine, provider, model_id, account_id,
		account_name, model_name, coalesce(reasoning_effort, ''), coalesce(profile_id, ''), coalesce(head_session_id, ''),
		coalesce(head_message_id::text, ''), coalesce(active_run_id::text, ''), title, coalesce(base_snapshot_id, '')
		FROM streammgr.chat_sessions WHERE id = $1 AND tenant_id = $2`+lock, id, tenant).Scan(
		&l.ID, &l.Tenant, &l.Project, &l.Engine, &l.Provider, &l.Model, &l.AccountID, &l.AccountName, &l.ModelName,
		&l.Effort, &l.Profile, &l.HeadSessionID, &l.HeadMessageID, &l.ActiveRunID, &l.Title, &l.BaseSnapshot)
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
