package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/pgdb"
)

// promptExcerpt is how much of a turn's prompt a checkpoint or a run
// quotes, in characters.
const promptExcerpt = 200

// PromptExcerpt is the start of a prompt's first text block, as a
// checkpoint quotes it.
func PromptExcerpt(prompt events.Blocks) string {
	for _, b := range prompt {
		if t, ok := b.(events.TextBlock); ok {
			r := []rune(t.Text)
			return string(r[:min(len(r), promptExcerpt)])
		}
	}
	return ""
}

// Checkpoints returns the turns on the path from head towards the root (up
// to limit messages), oldest first: each turn's run, its first and last
// message on the path, and the snapshot it left.
func Checkpoints(ctx context.Context, db DB, session, head string, limit int) ([]events.Checkpoint, error) {
	if head == "" {
		return []events.Checkpoint{}, nil
	}
	rows, err := db.Query(ctx, `WITH RECURSIVE path AS (
			SELECT id, parent_message_id, run_id, type, data, created_at, 1 AS depth FROM streammgr.messages
			WHERE id = $1 AND session_id = $2
			UNION ALL
			SELECT m.id, m.parent_message_id, m.run_id, m.type, m.data, m.created_at, p.depth + 1 FROM streammgr.messages m
			JOIN path p ON m.id = p.parent_message_id WHERE p.depth < $3 AND m.session_id = $2)
		SELECT path.id::text, path.run_id::text, path.type, path.created_at,
			CASE WHEN path.type = 'user' THEN left(coalesce(
				jsonb_path_query_first(path.data, '$.content[*] ? (@.type == "text").text') #>> '{}', ''), $4) ELSE '' END,
			r.state, r.snapshot
		FROM path JOIN streammgr.runs r ON r.id = path.run_id
		ORDER BY path.depth DESC`, head, session, limit, promptExcerpt)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	defer rows.Close()
	out := []events.Checkpoint{}
	var id, run, typ, prompt, state string
	var at time.Time
	var snap []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &run, &typ, &at, &prompt, &state, &snap}, func() error {
		if n := len(out); n == 0 || out[n-1].RunID != run {
			c := events.Checkpoint{RunID: run, State: events.RunStateName(state), CreatedAt: at}
			if snap != nil {
				var s events.RunSnapshot
				if json.Unmarshal(snap, &s) == nil {
					c.Snapshot = &s
				}
			}
			out = append(out, c)
		}
		c := &out[len(out)-1]
		if typ == events.TypeUser && c.UserMessageID == "" {
			c.UserMessageID, c.Prompt, c.CreatedAt = id, prompt, at
		}
		c.MessageID = id
		return nil
	})
	return out, err
}

// ErrNotInSession is returned by SetHead for a message of another session.
var ErrNotInSession = errors.New("the message is not one of the session's")

// SetHead moves session l's HEAD (locked by the caller's transaction) to
// message, one of its own; the title and counters stay as they are.
func SetHead(ctx context.Context, tx pgx.Tx, l Locked, message string) error {
	if !isUUID(message) {
		return ErrNotInSession
	}
	var found bool
	err := tx.QueryRow(ctx, `SELECT true FROM streammgr.messages WHERE id = $1 AND session_id = $2 AND NOT is_deleted`,
		message, l.ID).Scan(&found)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotInSession
	}
	if err != nil {
		return fmt.Errorf("find message: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE streammgr.chat_sessions SET head_message_id = $2, updated_at = now() WHERE id = $1`,
		l.ID, message); err != nil {
		return fmt.Errorf("set head: %w", err)
	}
	return nil
}

// LiveSnapshots adds to live the snapshot ids tenant's runs and sessions
// refer to (see streammgr.LiveSnapshots).
func LiveSnapshots(ctx context.Context, db DB, tenant string, live map[string]bool) error {
	if !isUUID(tenant) {
		return nil // no such tenant here: nothing of its is needed by streammgr
	}
	rows, err := db.Query(ctx, `SELECT snapshot_id FROM streammgr.runs WHERE tenant_id = $1 AND snapshot_id IS NOT NULL
		UNION SELECT job->>'snapshot' FROM streammgr.runs WHERE tenant_id = $1 AND job->>'snapshot' IS NOT NULL
		UNION SELECT base_snapshot_id FROM streammgr.chat_sessions WHERE tenant_id = $1 AND base_snapshot_id IS NOT NULL`, tenant)
	if err != nil {
		return fmt.Errorf("live snapshots: %w", err)
	}
	return pgdb.AddTo(rows, live)
}

// TenantWorkspaceBytes is what tenant's sessions hold: the size of each
// session's newest snapshot, summed.
func TenantWorkspaceBytes(ctx context.Context, db DB, tenant string) (int64, error) {
	var n int64
	err := db.QueryRow(ctx, `SELECT coalesce(sum(b), 0)::bigint FROM (
			SELECT DISTINCT ON (session_id) coalesce((snapshot->>'bytes')::bigint, 0) AS b FROM streammgr.runs
			WHERE tenant_id = $1 AND snapshot_id IS NOT NULL ORDER BY session_id, ended_at DESC NULLS LAST) newest`, tenant).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("tenant workspace bytes: %w", err)
	}
	return n, nil
}
