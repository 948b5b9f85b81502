package eventlog

import (
	"context"
	"fmt"
	"strings"
)

// Dead is an event the log could not take: Postgres refused it, or one of
// the projections it feeds, for what it holds. It is kept apart, as it
// arrived, so that one event never holds up the events behind it and an
// operator can see what was lost and why.
type Dead struct {
	Key
	Tenant, Session string
	JSSeq           int64 // 0 for streammgr's own events
	Type            string
	Payload         []byte // the output as it arrived; not necessarily valid jsonb
	Error           string // why it was refused
	// Projected is true when the run's state changes (position, state,
	// terminal) were applied without the event's content.
	Projected bool
}

// Bury records a dead event in the caller's transaction. It is idempotent:
// a redelivered copy updates the record.
func Bury(ctx context.Context, db DB, d Dead) error {
	_, err := db.Exec(ctx, `INSERT INTO streammgr.dead_events
		(run_id, epoch, seq, tenant_id, session_id, js_seq, type, payload, error, projected)
		VALUES ($1, $2, $3, $4, $5, nullif($6, 0), $7, $8, $9, $10)
		ON CONFLICT (run_id, epoch, seq) DO UPDATE SET error = excluded.error, projected = excluded.projected`,
		d.Run, d.Epoch, d.Seq, d.Tenant, d.Session, d.JSSeq, Scrub(d.Type), d.Payload, Scrub(d.Error), d.Projected)
	if err != nil {
		return fmt.Errorf("bury event %s/%d/%d: %w", d.Run, d.Epoch, d.Seq, err)
	}
	return nil
}

// Scrub removes NUL characters, which no Postgres text value can hold.
func Scrub(s string) string { return strings.ReplaceAll(s, "\x00", "") }
