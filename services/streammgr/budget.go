package streammgr

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// Budgets. A tenant's budget limits what its runs spend per calendar period
// (UTC): tokens or dollars. Spend is read from the runs themselves (no
// counter to keep in step): the runs queued in the period, each counted by
// its final usage once it ended, and by its newest live report (a "usage"
// event) while it runs. Two places enforce it. Admission (decide, under the
// tenant's lock) refuses a send, a retry and the dispatch of a held run
// once a budget is spent: the send is a 402 budget_exhausted, a held run
// keeps waiting. The budget watch (budgetwatch.go) stops the tenant's
// running turns when their live usage spends it. Budgets live here because
// streammgr owns the runs, their usage and admission: the check needs no
// other service, and runs under the same lock as the limits.

// Audit is streammgr's audit log: changes to budgets and limits.
var Audit = audit.Log{Service: Name, Table: "streammgr.audit_log"}

// maxTokenBudget and maxUSDBudget bound a budget's limit.
const (
	maxTokenBudget = 1e15
	maxUSDBudget   = 1e9
)

// budgetStates returns tenant's budgets with what it spent in each one's
// period around now; nil when it has none.
func budgetStates(ctx context.Context, db store.DB, tenant string, now time.Time) ([]events.BudgetState, error) {
	budgets, err := store.Budgets(ctx, db, tenant)
	if err != nil || len(budgets) == 0 {
		return nil, err
	}
	return statesOf(ctx, db, tenant, budgets, now)
}

// statesOf prices budgets at now: one spend query per period.
func statesOf(ctx context.Context, db store.DB, tenant string, budgets []events.Budget, now time.Time) ([]events.BudgetState, error) {
	spent := map[events.BudgetPeriod]store.Spent{}
	out := make([]events.BudgetState, 0, len(budgets))
	for _, b := range budgets {
		from, to := b.Period.Bounds(now)
		s, ok := spent[b.Period]
		if !ok {
			var err error
			if s, err = store.Spend(ctx, db, tenant, from, to); err != nil {
				return nil, err
			}
			spent[b.Period] = s
		}
		v := s.Of(b.Unit)
		out = append(out, events.BudgetState{Budget: b, Spent: v, PeriodStart: from, ResetsAt: to, Exhausted: v >= b.Limit})
	}
	return out, nil
}

// spentOne returns the first spent budget of states, if any.
func spentOne(states []events.BudgetState) (events.BudgetState, bool) {
	for _, s := range states {
		if s.Exhausted {
			return s, true
		}
	}
	return events.BudgetState{}, false
}

// budgetRefusal is the 402 of a send while b is spent.
func budgetRefusal(b events.BudgetState) *events.APIError {
	e := svc.Errorf(http.StatusPaymentRequired, "budget_exhausted", "%s; nothing was queued: send again once the period resets or the budget is raised",
		b.Summary())
	e.RetryAfter = int(math.Ceil(time.Until(b.ResetsAt).Seconds()))
	e.Budget = &b
	return e
}

// budgets is svc.streammgr.budgets: the caller's tenant's budgets and
// spend, for its admins.
func (m *Manager) budgets(ctx context.Context, req events.BudgetsRequest) (events.BudgetsReply, error) {
	if req.Role != "admin" {
		return events.BudgetsReply{}, svc.Errorf(http.StatusForbidden, "forbidden", "only tenant admins may read the tenant's budgets")
	}
	states, err := budgetStates(ctx, m.db, req.TenantID, time.Now())
	if err != nil {
		return events.BudgetsReply{}, err
	}
	return events.BudgetsReply{Budgets: append([]events.BudgetState{}, states...)}, nil
}

// TenantBudgets returns tenant's budgets with their current spend
// (`clopen admin tenant-budget`).
func TenantBudgets(ctx context.Context, db *pgxpool.Pool, tenant string) ([]events.BudgetState, error) {
	if _, err := uuid.Parse(tenant); err != nil {
		return nil, svc.Invalid("tenant: not a tenant id")
	}
	return budgetStates(ctx, db, tenant, time.Now())
}

// SetTenantBudget sets (limit ≥ 0) or, with remove, deletes tenant's budget
// of b's unit and period, recording the change in the audit log as actor's
// in the same transaction. A lower budget applies to the next send at once
// and to running turns within budgetCacheFor.
func SetTenantBudget(ctx context.Context, db *pgxpool.Pool, tenant string, b events.Budget, remove bool, actor events.AuditActor) error {
	if _, err := uuid.Parse(tenant); err != nil {
		return svc.Invalid("tenant: not a tenant id")
	}
	if err := checkBudget(b, remove); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var prev *events.Budget
		var err error
		action, after := "budget.set", &b
		if remove {
			action, after = "budget.delete", nil
			prev, err = store.DeleteBudget(ctx, tx, tenant, b.Unit, b.Period)
		} else {
			prev, err = store.PutBudget(ctx, tx, tenant, b)
		}
		if err != nil || (remove && prev == nil) {
			return err // nothing to delete: nothing changed, nothing to record
		}
		return Audit.Record(ctx, tx, audit.Entry{Tenant: tenant, Actor: actor, Action: action,
			Target: events.AuditTarget{Type: "budget", ID: string(b.Unit) + "/" + string(b.Period)}, Before: prev, After: after})
	})
}

// checkBudget refuses a budget with an unknown unit or period or a limit
// out of range, naming the field.
func checkBudget(b events.Budget, remove bool) error {
	switch {
	case !b.Unit.Valid():
		return svc.Invalid("unit: %q is not a budget unit; want tokens or usd", b.Unit)
	case !b.Period.Valid():
		return svc.Invalid("period: %q is not a budget period; want day, week or month", b.Period)
	case remove:
		return nil
	case math.IsNaN(b.Limit) || b.Limit < 0:
		return svc.Invalid("limit: %v is negative; want 0 or more (0 stops every turn)", b.Limit)
	case b.Unit == events.BudgetTokens && (b.Limit != math.Trunc(b.Limit) || b.Limit > maxTokenBudget):
		return svc.Invalid("limit: %v tokens; want a whole number up to %.0f", b.Limit, maxTokenBudget)
	case b.Unit == events.BudgetUSD && b.Limit > maxUSDBudget:
		return svc.Invalid("limit: $%v; want at most $%.0f", b.Limit, maxUSDBudget)
	}
	return nil
}
