// Package eventlog is the durable record of every run: an append-only table
// of engine events keyed by (run, epoch, seq). Appends are idempotent, so a
// redelivered or replayed event is stored once; reads return a run's events in
// order. Projections are derived from this log and can be rebuilt from it.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// MaxBatch is the most rows one Append writes in one statement.
const MaxBatch = 1000

// ErrBatchTooLarge is returned by Append for more than MaxBatch events.
var ErrBatchTooLarge = errors.New("eventlog: batch larger than MaxBatch")

// Key identifies one event of one run. Epoch 0 holds what streammgr recorded
// itself before any worker owned the run; epochs from 1 are lease revisions.
type Key struct {
	Run   string
	Epoch int64
	Seq   int64
}

// Event is one stored engine event. Payload is the JSON of the events.Output.
type Event struct {
	Key
	JSSeq     int64 // EVENTS stream sequence; 0 when written directly, not through the bus
	Type      string
	Payload   []byte
	CreatedAt time.Time
}

// DB is what the store needs from a pool, a connection or a transaction, so an
// append can share a transaction with the projections it feeds.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

const appendSQL = `
INSERT INTO streammgr.run_events (run_id, epoch, seq, js_seq, type, payload)
SELECT r::uuid, e, s, nullif(j, 0), t, p::jsonb
FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::text[], $6::text[]) AS u(r, e, s, j, t, p)
ON CONFLICT (run_id, epoch, seq) DO NOTHING
RETURNING run_id::text, epoch, seq`

// Append stores evs in one statement and returns the keys that were new;
// events already stored are skipped, so callers derive projections from the
// returned keys only. It does not commit: run it inside the caller's
// transaction, or on a pool for autocommit.
func Append(ctx context.Context, db DB, evs []Event) (map[Key]bool, error) {
	if len(evs) == 0 {
		return map[Key]bool{}, nil
	}
	if len(evs) > MaxBatch {
		return nil, fmt.Errorf("append %d events: %w", len(evs), ErrBatchTooLarge)
	}
	runs := make([]string, len(evs))
	epochs := make([]int64, len(evs))
	seqs := make([]int64, len(evs))
	jsSeqs := make([]int64, len(evs))
	types := make([]string, len(evs))
	payloads := make([]string, len(evs))
	for i, ev := range evs {
		runs[i], epochs[i], seqs[i], jsSeqs[i] = ev.Run, ev.Epoch, ev.Seq, ev.JSSeq
		types[i], payloads[i] = ev.Type, string(ev.Payload)
	}
	rows, err := db.Query(ctx, appendSQL, runs, epochs, seqs, jsSeqs, types, payloads)
	if err != nil {
		return nil, fmt.Errorf("append %d events: %w", len(evs), err)
	}
	inserted := make(map[Key]bool, len(evs))
	var k Key
	_, err = pgx.ForEachRow(rows, []any{&k.Run, &k.Epoch, &k.Seq}, func() error {
		inserted[k] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return inserted, nil
}

const readSQL = `
SELECT run_id::text, epoch, seq, coalesce(js_seq, 0), type, payload::text, created_at
FROM streammgr.run_events
WHERE run_id = $1::uuid AND (epoch, seq) > ($2, $3)
ORDER BY epoch, seq
LIMIT $4`

// Read returns up to limit events of run that come after position from, in
// order. Read(ctx, db, Key{Run: id}, n) starts at the beginning.
func Read(ctx context.Context, db DB, from Key, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = MaxBatch
	}
	rows, err := db.Query(ctx, readSQL, from.Run, from.Epoch, from.Seq, limit)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", from.Run, err)
	}
	var out []Event
	var ev Event
	var payload string
	_, err = pgx.ForEachRow(rows, []any{&ev.Run, &ev.Epoch, &ev.Seq, &ev.JSSeq, &ev.Type, &payload, &ev.CreatedAt}, func() error {
		ev.Payload = []byte(payload)
		out = append(out, ev)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", from.Run, err)
	}
	return out, nil
}

// ReadAll returns every event of run in order, reading in pages.
func ReadAll(ctx context.Context, db DB, run string) ([]Event, error) {
	var all []Event
	from := Key{Run: run}
	for {
		page, err := Read(ctx, db, from, MaxBatch)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < MaxBatch {
			return all, nil
		}
		from = page[len(page)-1].Key
	}
}

// RecordUser stores the user message that opens run, as the run's first
// event (epoch 0, seq 1: streammgr writes it itself when it dispatches the
// run, before any worker owns it). Recording it again is a no-op.
func RecordUser(ctx context.Context, db DB, run string, payload []byte) error {
	if _, err := Append(ctx, db, []Event{{Key: Key{Run: run, Epoch: 0, Seq: 1}, Type: "user", Payload: payload}}); err != nil {
		return fmt.Errorf("record user message: %w", err)
	}
	return nil
}

// DeleteRuns removes the whole log of each of runs (a deleted session's), in
// the caller's transaction.
func DeleteRuns(ctx context.Context, db DB, runs []string) error {
	if len(runs) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, `DELETE FROM streammgr.run_events WHERE run_id = ANY($1::uuid[])`, runs); err != nil {
		return fmt.Errorf("delete the event log of %d runs: %w", len(runs), err)
	}
	return nil
}
