package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/store"
)

// TestSpendCountsAsBudgetsDo: a run counts by the proxy's count, else the
// engine's report, else its live report (the proxy's over the engine's);
// input, output and cache writes, not cache reads; cost is the larger of
// the report and the live estimate. An ended run counts once its end
// settled it into the ledger, a running one by its live report. Runs not
// dispatched, of another tenant, or queued outside the range do not
// count; deleting the session gives nothing back.
func TestSpendCountsAsBudgetsDo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	var ended []string
	add := func(tenant, state string, queued time.Time, dispatched bool, set string, args ...any) {
		t.Helper()
		id := uuid.NewString()
		var disp *time.Time
		if dispatched {
			disp = &queued
		}
		if _, err := f.db.Exec(ctx, `INSERT INTO streammgr.runs (id, tenant_id, session_id, project_id, state, engine, job, queued_at, dispatched_at)
			VALUES ($1, $2, $3, $4, $5, 'scripted', '{}', $6, $7)`, id, tenant, f.session, uuid.NewString(), state, queued, disp); err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.Exec(ctx, `UPDATE streammgr.runs SET `+set+` WHERE id = $1`, append([]any{id}, args...)...); err != nil {
			t.Fatal(err)
		}
		if state != "running" {
			ended = append(ended, id)
		}
	}
	u := func(in, out, write, read int) string {
		return fmt.Sprintf(`{"inputTokens":%d,"outputTokens":%d,"cacheCreationInputTokens":%d,"cacheReadInputTokens":%d}`, in, out, write, read)
	}
	// metered wins over the report: 100+10+1
	add(f.tenant, "completed", now, true, `metered_usage = $2, usage = $3, cost_usd = 0.5`, u(100, 10, 1, 5000), u(1, 1, 1, 1))
	// the report, with no meter: 200+20+2; cost: the report (0.25) beats the live estimate (0.1)
	add(f.tenant, "failed", now, true, `usage = $2, cost_usd = 0.25, live_usage = $3`, u(200, 20, 2, 5000),
		`{"source":"engine","usage":`+u(9, 9, 9, 9)+`,"costUsd":0.1}`)
	// still running: its live report, 300+30+3, and its live cost 1.5
	add(f.tenant, "running", now, true, `live_usage = $2`, `{"source":"proxy","usage":`+u(300, 30, 3, 5000)+`,"costUsd":1.5}`)
	add(f.tenant, "cancelled", now, false, `usage = $2`, u(1e6, 0, 0, 0))                                 // never dispatched
	add(uuid.NewString(), "completed", now, true, `usage = $2`, u(1e6, 0, 0, 0))                          // another tenant
	add(f.tenant, "completed", now.Add(-48*time.Hour), true, `usage = $2, cost_usd = 9`, u(1e6, 0, 0, 0)) // another period
	f.inTx(t, func(tx pgx.Tx) error { return store.SettleSpend(ctx, tx, ended) })
	from, to := events.PeriodDay.Bounds(now)
	want := store.Spent{Tokens: 111 + 222 + 333, USD: 0.5 + 0.25 + 1.5}
	spend := func() store.Spent {
		t.Helper()
		got, err := store.Spend(ctx, f.db, f.tenant, from, to)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := spend(); got != want {
		t.Errorf("Spend = %+v, want %+v", got, want)
	}
	f.inTx(t, func(tx pgx.Tx) error {
		_, err := store.DeleteSession(ctx, tx, f.tenant, f.session)
		return err
	})
	if got := spend(); got != want {
		t.Errorf("Spend after the session's deletion = %+v, want %+v still", got, want)
	}
}

// BenchmarkSpend is the cost of one budget check's spend query for a
// tenant with many runs in the period (ten still running, more than its
// limits let run at once by default),
// among other tenants' runs, with a month of ledger days.
func BenchmarkSpend(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f := newFixture(b)
			ctx := context.Background()
			for _, tenant := range []string{f.tenant, uuid.NewString()} {
				if _, err := f.db.Exec(ctx, `INSERT INTO streammgr.runs (id, tenant_id, session_id, project_id, state, engine, job,
					queued_at, dispatched_at, usage, metered_usage, cost_usd)
					SELECT gen_random_uuid(), $1, $2, $3, CASE WHEN i <= 10 THEN 'running' ELSE 'completed' END, 'scripted', '{}',
						now() - (i % 600) * interval '1 second', now(),
						'{"inputTokens":1000,"outputTokens":100,"cacheCreationInputTokens":0,"cacheReadInputTokens":2000}',
						CASE WHEN i % 2 = 0 THEN '{"inputTokens":1000,"outputTokens":100,"cacheCreationInputTokens":0,"cacheReadInputTokens":2000}'::jsonb END,
						0.01 FROM generate_series(1, $4) AS i`, tenant, f.session, uuid.NewString(), n); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := f.db.Exec(ctx, `INSERT INTO streammgr.tenant_spend (tenant_id, day, tokens, usd)
				SELECT $1, d::date, 1000, 1 FROM generate_series(now() - interval '30 days', now(), interval '1 day') AS d
				ON CONFLICT DO NOTHING`, f.tenant); err != nil {
				b.Fatal(err)
			}
			if _, err := f.db.Exec(ctx, `ANALYZE streammgr.runs`); err != nil {
				b.Fatal(err)
			}
			from, to := events.PeriodMonth.Bounds(time.Now())
			b.ResetTimer()
			for b.Loop() {
				if _, err := store.Spend(ctx, f.db, f.tenant, from, to); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
