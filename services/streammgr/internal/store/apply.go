package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/router"
)

// Projected is one newly stored event's routing outcome.
type Projected struct {
	Tenant, Session, Run string
	Out                  router.Outcome
}

// Ended names a run whose terminal event a batch stored, and the state it
// ended in.
type Ended struct {
	Tenant, Session, Run string
	State                events.RunStateName
}

// Apply writes the projections of newly stored events — message rows, their
// rewrites, run and session changes, rate limits — and each session's chat
// cursor, in one round trip inside the caller's transaction. It returns the
// runs that ended.
func Apply(ctx context.Context, tx pgx.Tx, ps []Projected, cursors map[string]uint64) ([]Ended, error) {
	b := &pgx.Batch{}
	var ins insertArrays
	runs := map[string]*runAgg{}
	sessions := map[string]*sessAgg{}
	var order []string // runs in first-seen order
	var ended []Ended
	var updates []router.Update // after the inserts: a message saved and rewritten in one batch keeps the rewrite
	limits := map[rateKey]events.ChatRateLimit{}
	for _, p := range ps {
		o := p.Out
		for _, m := range o.Inserts {
			if err := ins.add(p, m); err != nil {
				return nil, err
			}
		}
		updates = append(updates, o.Updates...)
		if rl := o.RateLimit; rl != nil {
			limits[rateKey{p.Tenant, string(rl.Engine), rl.AccountID}] = rl.Data // the latest report wins
		}
		ra, ok := runs[p.Run]
		if !ok {
			ra = &runAgg{}
			runs[p.Run] = ra
			order = append(order, p.Run)
		}
		ra.add(o)
		sa := sessions[p.Session]
		if sa == nil {
			sa = &sessAgg{}
			sessions[p.Session] = sa
		}
		sa.add(o.Session)
		if o.Terminal != "" {
			ended = append(ended, Ended{Tenant: p.Tenant, Session: p.Session, Run: p.Run, State: o.Terminal})
		}
	}
	// In key order: writers committing in parallel then lock shared rows
	// in the same order and never deadlock.
	for _, k := range slices.SortedFunc(maps.Keys(limits), rateKey.compare) {
		data, _ := json.Marshal(limits[k])
		b.Queue(`INSERT INTO streammgr.rate_limits (tenant_id, engine, account_id, payload) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant_id, engine, account_id) DO UPDATE SET payload = excluded.payload, updated_at = now()`,
			k.tenant, k.engine, k.account, data)
	}
	if len(ins.ids) > 0 {
		b.Queue(`INSERT INTO streammgr.messages (id, tenant_id, session_id, run_id, parent_message_id, type, data, created_at)
			SELECT i::uuid, t::uuid, s::uuid, r::uuid, nullif(p, '')::uuid, ty, d::jsonb, c
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
				AS u(i, t, s, r, p, ty, d, c)
			ON CONFLICT (id) DO NOTHING`, ins.ids, ins.tenants, ins.sessions, ins.runs, ins.parents, ins.types, ins.data, ins.at)
	}
	for _, u := range updates {
		data, err := events.EncodeOutput(u.Output)
		if err != nil {
			return nil, err
		}
		b.Queue(`UPDATE streammgr.messages SET data = $2 WHERE id = $1`, u.RowID, data)
	}
	for _, id := range order {
		runs[id].queue(b, id)
	}
	for id, c := range cursors {
		if sessions[id] == nil {
			sessions[id] = &sessAgg{}
		}
		sessions[id].cursor = c
	}
	for id, sa := range sessions {
		sa.queue(b, id)
	}
	if b.Len() == 0 {
		return ended, nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("apply projections: %w", err)
	}
	return ended, nil
}

// rateKey is a rate_limits row.
type rateKey struct{ tenant, engine, account string }

func (a rateKey) compare(b rateKey) int {
	return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.engine, b.engine), strings.Compare(a.account, b.account))
}

type insertArrays struct {
	ids, tenants, sessions, runs, parents, types, data []string
	at                                                 []time.Time
}

func (a *insertArrays) add(p Projected, m router.Message) error {
	data, err := events.EncodeOutput(m.Output)
	if err != nil {
		return fmt.Errorf("encode message %s: %w", m.RowID, err)
	}
	a.ids = append(a.ids, m.RowID)
	a.tenants = append(a.tenants, p.Tenant)
	a.sessions = append(a.sessions, p.Session)
	a.runs = append(a.runs, p.Run)
	a.parents = append(a.parents, m.ParentRowID)
	a.types = append(a.types, m.Output.OutputType())
	a.data = append(a.data, string(data))
	a.at = append(a.at, m.CreatedAt)
	return nil
}

// runAgg folds a batch's changes to one run into one UPDATE.
type runAgg struct {
	state                 events.RunStateName
	epoch, lastSeq        uint64
	worker, engineSession string
	claimedAt, firstAt    *time.Time
	endedAt               *time.Time
	usage, metered        []byte
	live                  []byte
	liveSource            events.UsageSource
	snapshot              []byte
	snapshotID            string
	cost                  *float64
	turns                 *int
	errMsg                string
	errKind               events.ErrorKind
	artifactRev           *int64
	effort                *string
}

func (a *runAgg) add(o router.Outcome) {
	c := o.Run
	at := o.At
	if c.State != "" {
		a.state = c.State
	}
	if c.Epoch > a.epoch || (c.Epoch == a.epoch && c.LastSeq > a.lastSeq) {
		a.epoch, a.lastSeq = c.Epoch, c.LastSeq
	}
	if c.Claimed && a.claimedAt == nil {
		a.claimedAt = &at
	}
	if c.WorkerID != "" {
		a.worker = c.WorkerID
	}
	if c.FirstOutput && a.firstAt == nil {
		a.firstAt = &at
	}
	if c.EngineSession != "" {
		a.engineSession = c.EngineSession
	}
	if c.Usage != nil {
		a.usage, _ = json.Marshal(c.Usage)
	}
	if c.MeteredUsage != nil {
		a.metered, _ = json.Marshal(c.MeteredUsage)
	}
	if c.Live != nil && (c.Live.Source == events.UsageFromProxy || a.liveSource != events.UsageFromProxy) {
		// The proxy's count wins over the engine's, as on the row.
		a.live, _ = json.Marshal(c.Live)
		a.liveSource = c.Live.Source
	}
	if c.Snapshot != nil {
		a.snapshot, _ = json.Marshal(c.Snapshot)
		a.snapshotID = c.Snapshot.ID
	}
	if c.CostUSD != nil {
		a.cost = c.CostUSD
	}
	if c.NumTurns != nil {
		a.turns = c.NumTurns
	}
	if c.Error != "" {
		a.errMsg = c.Error
	}
	if c.ErrorKind != "" {
		a.errKind = c.ErrorKind
	}
	if c.ArtifactRevision > 0 {
		rev := c.ArtifactRevision
		a.artifactRev = &rev
	}
	if c.Effort != nil {
		a.effort = c.Effort
	}
	if o.Terminal != "" {
		a.endedAt = &at
	}
}

// queue updates the run row. The claim, first output and end are stamped
// with the worker's clock (when it emitted the event) and the queueing and
// dispatch with streammgr's; each is raised to the one before it, so a run's
// timings never go backwards whatever the clocks' skew.
func (a *runAgg) queue(b *pgx.Batch, id string) {
	b.Queue(`UPDATE streammgr.runs SET
		state = coalesce(nullif($2, ''), state),
		epoch = greatest(epoch, $3),
		last_seq = CASE WHEN $3 > epoch THEN $4 WHEN $3 = epoch THEN greatest(last_seq, $4) ELSE last_seq END,
		worker_id = coalesce(nullif($5, ''), worker_id),
		claimed_at = coalesce(claimed_at, CASE WHEN $6::timestamptz IS NOT NULL THEN greatest($6, dispatched_at, queued_at) END),
		first_output_at = coalesce(first_output_at,
			CASE WHEN $7::timestamptz IS NOT NULL THEN greatest($7, claimed_at, $6, dispatched_at, queued_at) END),
		engine_session_id = coalesce(nullif($8, ''), engine_session_id),
		usage = coalesce($9::jsonb, usage),
		cost_usd = coalesce($10, cost_usd),
		num_turns = coalesce($11, num_turns),
		error = coalesce(nullif($12, ''), error),
		error_kind = coalesce(nullif($13, ''), error_kind),
		ended_at = coalesce(ended_at,
			CASE WHEN $14::timestamptz IS NOT NULL THEN greatest($14, first_output_at, $7, claimed_at, $6, dispatched_at, queued_at) END),
		artifact_revision = coalesce($15, artifact_revision),
		reasoning_effort = CASE WHEN $16::text IS NULL THEN reasoning_effort ELSE nullif($16, '') END,
		metered_usage = coalesce($17::jsonb, metered_usage),
		snapshot = coalesce($18::jsonb, snapshot),
		snapshot_id = coalesce(nullif($19, ''), snapshot_id),
		live_usage = CASE WHEN $20::jsonb IS NULL OR ($20::jsonb->>'source' <> 'proxy' AND live_usage->>'source' = 'proxy')
			THEN live_usage ELSE $20::jsonb END
		WHERE id = $1`,
		id, string(a.state), int64(a.epoch), int64(a.lastSeq), a.worker, a.claimedAt, a.firstAt, a.engineSession,
		a.usage, a.cost, a.turns, a.errMsg, string(a.errKind), a.endedAt, a.artifactRev, a.effort, a.metered,
		a.snapshot, a.snapshotID, a.live)
}

// sessAgg folds a batch's changes to one session into one UPDATE.
type sessAgg struct {
	head, engineSession string
	summary             *string
	added               int
	lastAt              *time.Time
	cursor              uint64
}

func (a *sessAgg) add(c router.SessionChange) {
	if c.Head != "" {
		a.head = c.Head
	}
	if c.HeadSessionID != "" {
		a.engineSession = c.HeadSessionID
	}
	if c.Summary != nil {
		a.summary = c.Summary
	}
	a.added += c.AddMessages
	if c.LastMessageAt != nil {
		a.lastAt = c.LastMessageAt
	}
}

func (a *sessAgg) queue(b *pgx.Batch, id string) {
	b.Queue(`UPDATE streammgr.chat_sessions SET
		head_message_id = coalesce(nullif($2, '')::uuid, head_message_id),
		head_session_id = coalesce(nullif($3, ''), head_session_id),
		head_summary = coalesce($4, head_summary),
		message_count = message_count + $5,
		last_message_at = greatest(last_message_at, $6),
		chat_cursor = greatest(chat_cursor, $7),
		updated_at = now()
		WHERE id = $1`, id, a.head, a.engineSession, a.summary, a.added, a.lastAt, int64(a.cursor))
}
