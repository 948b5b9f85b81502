package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
)

// Budgets returns tenant's budgets, shortest period first.
func Budgets(ctx context.Context, db DB, tenant string) ([]events.Budget, error) {
	rows, err := db.Query(ctx, `SELECT unit, period, amount FROM streammgr.tenant_budgets WHERE tenant_id = $1
		ORDER BY array_position(ARRAY['day', 'week', 'month'], period), unit`, tenant)
	if err != nil {
		return nil, fmt.Errorf("budgets: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.Budget, error) {
		var b events.Budget
		return b, r.Scan(&b.Unit, &b.Period, &b.Limit)
	})
}

// PutBudget sets tenant's budget of b's unit and period and returns the one
// it replaced (nil: none). It locks the row, so the caller's transaction
// records exactly what it changed.
func PutBudget(ctx context.Context, tx pgx.Tx, tenant string, b events.Budget) (*events.Budget, error) {
	prev, err := lockBudget(ctx, tx, tenant, b.Unit, b.Period)
	if err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO streammgr.tenant_budgets (tenant_id, unit, period, amount) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, unit, period) DO UPDATE SET amount = $4, updated_at = now()`, tenant, b.Unit, b.Period, b.Limit)
	if err != nil {
		return nil, fmt.Errorf("put budget: %w", err)
	}
	return prev, nil
}

// DeleteBudget removes tenant's budget of unit and period and returns it
// (nil: there was none).
func DeleteBudget(ctx context.Context, tx pgx.Tx, tenant string, unit events.BudgetUnit, period events.BudgetPeriod) (*events.Budget, error) {
	prev, err := lockBudget(ctx, tx, tenant, unit, period)
	if err != nil || prev == nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM streammgr.tenant_budgets WHERE tenant_id = $1 AND unit = $2 AND period = $3`,
		tenant, unit, period); err != nil {
		return nil, fmt.Errorf("delete budget: %w", err)
	}
	return prev, nil
}

func lockBudget(ctx context.Context, tx pgx.Tx, tenant string, unit events.BudgetUnit, period events.BudgetPeriod) (*events.Budget, error) {
	b := events.Budget{Unit: unit, Period: period}
	err := tx.QueryRow(ctx, `SELECT amount FROM streammgr.tenant_budgets WHERE tenant_id = $1 AND unit = $2 AND period = $3
		FOR UPDATE`, tenant, unit, period).Scan(&b.Limit)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read budget: %w", err)
	}
	return &b, nil
}

// Spent is what a tenant spent in a time range, as budgets count it.
type Spent struct {
	Tokens int64
	USD    float64
}

// Of returns the spend in unit.
func (s Spent) Of(unit events.BudgetUnit) float64 {
	if unit == events.BudgetUSD {
		return s.USD
	}
	return float64(s.Tokens)
}

// runTokens is a run's usage as budgets count it: the model proxy's count
// when it has one (the provider's own report), else the engine's report,
// else, for a run still going (or lost before its end), its newest live
// report; input, output and cache-write tokens, not cache reads.
const runTokens = `(SELECT coalesce((u->>'inputTokens')::bigint, 0) + coalesce((u->>'outputTokens')::bigint, 0) +
		coalesce((u->>'cacheCreationInputTokens')::bigint, 0)
	FROM (SELECT coalesce(metered_usage, usage, live_usage->'usage') AS u) AS x)`

// runCost is a run's cost as budgets count it: the larger of the engine's
// report and the live estimate (the proxy's count at the model's price),
// so a run whose engine reports no cost still counts what it cost.
const runCost = `greatest(coalesce(cost_usd, 0), coalesce((live_usage->>'costUsd')::double precision, 0))`

// Spend sums what tenant spent from the UTC midnight from to the UTC
// midnight to, as budgets count it: the ledger of its ended runs
// (SettleSpend) and its unfinished runs queued in the range, by their live
// reports. The runs are those GET /v1/usage sums for that range, and a
// deleted run still counts.
func Spend(ctx context.Context, db DB, tenant string, from, to time.Time) (Spent, error) {
	var s Spent
	err := db.QueryRow(ctx, `SELECT
		coalesce((SELECT sum(tokens) FROM streammgr.tenant_spend WHERE tenant_id = $1 AND day >= $4::date AND day < $5::date), 0) +
		coalesce((SELECT sum(`+runTokens+`) FROM streammgr.runs WHERE tenant_id = $1 AND dispatched_at IS NOT NULL
			AND `+unfinished+` AND queued_at >= $2 AND queued_at < $3), 0),
		coalesce((SELECT sum(usd) FROM streammgr.tenant_spend WHERE tenant_id = $1 AND day >= $4::date AND day < $5::date), 0) +
		coalesce((SELECT sum(`+runCost+`) FROM streammgr.runs WHERE tenant_id = $1 AND dispatched_at IS NOT NULL
			AND `+unfinished+` AND queued_at >= $2 AND queued_at < $3), 0)`,
		tenant, from, to, from.UTC().Format(time.DateOnly), to.UTC().Format(time.DateOnly)).Scan(&s.Tokens, &s.USD)
	if err != nil {
		return Spent{}, fmt.Errorf("budget spend: %w", err)
	}
	return s, nil
}

// SettleSpend adds what the dispatched runs among runs spent (their final
// usage, or what they had reported when they were cut short) to their
// tenants' ledger, on the UTC day each was queued. The caller's
// transaction ends the runs or deletes them: each run is settled once.
func SettleSpend(ctx context.Context, tx pgx.Tx, runs []string) error {
	if len(runs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO streammgr.tenant_spend (tenant_id, day, tokens, usd)
		SELECT tenant_id, (queued_at AT TIME ZONE 'UTC')::date, sum(`+runTokens+`), sum(`+runCost+`)
		FROM streammgr.runs WHERE id = ANY($1::uuid[]) AND dispatched_at IS NOT NULL GROUP BY 1, 2
		ON CONFLICT (tenant_id, day) DO UPDATE SET tokens = streammgr.tenant_spend.tokens + excluded.tokens,
			usd = streammgr.tenant_spend.usd + excluded.usd`, runs)
	if err != nil {
		return fmt.Errorf("settle spend: %w", err)
	}
	return nil
}

// RunningRuns returns tenant's runs that are dispatched and not yet ended:
// those a spent budget stops.
func RunningRuns(ctx context.Context, db DB, tenant string) ([]RunRow, error) {
	rows, err := db.Query(ctx, `SELECT `+runColumns+` FROM streammgr.runs
		WHERE tenant_id = $1 AND dispatched_at IS NOT NULL AND `+unfinished+` ORDER BY queued_at LIMIT 10000`, tenant)
	if err != nil {
		return nil, fmt.Errorf("running runs: %w", err)
	}
	return scanRuns(rows)
}
