package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
)

// InsertMessage appends a message row (idempotent on its id).
func InsertMessage(ctx context.Context, db DB, tenant, session, run, rowID, parent string, o events.Output, at time.Time) error {
	data, err := events.EncodeOutput(o)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `INSERT INTO streammgr.messages (id, tenant_id, session_id, run_id, parent_message_id, type, data, created_at)
		VALUES ($1, $2, $3, nullif($4, '')::uuid, nullif($5, '')::uuid, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
		rowID, tenant, session, run, parent, o.OutputType(), data, at)
	return err
}

// ListMessages pages through a session's messages in saved order.
func ListMessages(ctx context.Context, db DB, tenant, session, afterRow string, limit int) ([]events.MessageRow, error) {
	if !isUUID(session) {
		return nil, ErrNotFound
	}
	if limit <= 0 || limit > 1000 {
		limit = 500
	}
	var after time.Time
	if afterRow != "" {
		if !isUUID(afterRow) {
			return nil, ErrNotFound
		}
		if err := db.QueryRow(ctx, `SELECT created_at FROM streammgr.messages WHERE id = $1 AND session_id = $2`,
			afterRow, session).Scan(&after); err != nil {
			return nil, notFound(err)
		}
	}
	rows, err := db.Query(ctx, `SELECT m.id::text, coalesce(m.parent_message_id::text, ''), coalesce(m.run_id::text, ''),
		m.data::text, m.created_at
		FROM streammgr.messages m JOIN streammgr.chat_sessions s ON s.id = m.session_id
		WHERE m.session_id = $1 AND s.tenant_id = $2 AND NOT m.is_deleted
		  AND ($3::text = '' OR (m.created_at, m.id) > ($4, $3::uuid))
		ORDER BY m.created_at, m.id LIMIT $5`, session, tenant, afterRow, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	defer rows.Close()
	out := []events.MessageRow{}
	var m events.MessageRow
	var data string
	_, err = pgx.ForEachRow(rows, []any{&m.RowID, &m.ParentRowID, &m.RunID, &data, &m.CreatedAt}, func() error {
		m.Message = json.RawMessage(data)
		out = append(out, m)
		return nil
	})
	return out, err
}

// Branch is one saved message on the path from a session's HEAD to its root.
type Branch struct {
	Type          string
	EngineType    string
	EngineSession string
}

// WalkHead returns up to limit messages from head towards the root, newest first.
func WalkHead(ctx context.Context, db DB, head string, limit int) ([]Branch, error) {
	if head == "" {
		return nil, nil
	}
	rows, err := db.Query(ctx, `WITH RECURSIVE path AS (
			SELECT id, parent_message_id, type, data, 1 AS depth FROM streammgr.messages WHERE id = $1
			UNION ALL
			SELECT m.id, m.parent_message_id, m.type, m.data, p.depth + 1 FROM streammgr.messages m
			JOIN path p ON m.id = p.parent_message_id WHERE p.depth < $2)
		SELECT type, coalesce(data->'engine'->>'type', ''), coalesce(data->>'sessionId', '') FROM path ORDER BY depth`, head, limit)
	if err != nil {
		return nil, fmt.Errorf("walk head: %w", err)
	}
	defer rows.Close()
	var out []Branch
	var b Branch
	_, err = pgx.ForEachRow(rows, []any{&b.Type, &b.EngineType, &b.EngineSession}, func() error {
		out = append(out, b)
		return nil
	})
	return out, err
}

// HeadSnapshot returns the snapshot a turn on head starts from: the one
// left by the newest run on the path from head towards the root (up to
// limit messages) that left one, "" when none did. A fork or a restore
// moves HEAD, and with it the files the next turn sees.
func HeadSnapshot(ctx context.Context, db DB, head string, limit int) (string, error) {
	s, err := HeadSnapshotHolder(ctx, db, head, limit)
	return s.ID, err
}

// SnapshotHolder is a snapshot and the worker whose run left it, which
// likely still holds a copy ("" when unknown).
type SnapshotHolder struct {
	ID, Worker string
}

// HeadSnapshotHolder is HeadSnapshot with the worker of the run that left
// the snapshot.
func HeadSnapshotHolder(ctx context.Context, db DB, head string, limit int) (SnapshotHolder, error) {
	var s SnapshotHolder
	if head == "" {
		return s, nil
	}
	err := db.QueryRow(ctx, `WITH RECURSIVE path AS (
			SELECT id, parent_message_id, run_id, 1 AS depth FROM streammgr.messages WHERE id = $1
			UNION ALL
			SELECT m.id, m.parent_message_id, m.run_id, p.depth + 1 FROM streammgr.messages m
			JOIN path p ON m.id = p.parent_message_id WHERE p.depth < $2)
		SELECT r.snapshot_id, coalesce(r.worker_id, '') FROM path JOIN streammgr.runs r ON r.id = path.run_id
		WHERE r.snapshot_id IS NOT NULL ORDER BY path.depth LIMIT 1`, head, limit).Scan(&s.ID, &s.Worker)
	if errors.Is(err, pgx.ErrNoRows) {
		return SnapshotHolder{}, nil
	}
	if err != nil {
		return SnapshotHolder{}, fmt.Errorf("head snapshot: %w", err)
	}
	return s, nil
}

// SaveUserTurn records a user's message as the session's new HEAD and
// updates the session's title and counters.
func SaveUserTurn(ctx context.Context, tx pgx.Tx, l Locked, run, rowID string, msg events.UserMessage, title string) error {
	if err := InsertMessage(ctx, tx, l.Tenant, l.ID, run, rowID, l.HeadMessageID, msg, msg.CreatedAt); err != nil {
		return fmt.Errorf("save user message: %w", err)
	}
	_, err := tx.Exec(ctx, `UPDATE streammgr.chat_sessions SET head_message_id = $2, head_title = $3,
		title = CASE WHEN title = '' THEN $3 ELSE title END, message_count = message_count + 1,
		user_count = user_count + 1, last_message_at = $4, updated_at = now() WHERE id = $1`,
		l.ID, rowID, title, msg.CreatedAt)
	return err
}
