package streammgr

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/store"
)

// The budget watch stops a tenant's running turns once their usage spends
// one of its budgets. The event writers kick it, after each commit, with the
// tenants whose runs reported usage (a "usage" event, the proxy's count
// about once a second while a model answers) or ended; it reads the
// tenant's spend from the committed runs, and when a budget is spent it
// cancels every running turn of that tenant — no other tenant's — through
// the ordinary control path, asking the worker to end it failed with
// budget_exhausted and the budget's numbers. A turn whose owner does not
// answer is flagged and ended here, as a user's cancel is. Turns queued
// behind them stay held (admission refuses them the same way) until the
// period resets or the budget is raised. Only the routing instance's
// writers kick it, so one streammgr enforces at a time.

// Budget actions, as the clopen.budget.exhausted metric counts them.
const (
	actionRefused = "refused" // a send refused with 402
	actionStopped = "stopped" // a running turn stopped
)

// budgetCacheFor is how long the watch trusts the budgets it read for a
// tenant. Admission reads them afresh for every send and tells the watch
// (remember), so a turn sent after a change is watched under it at once; a
// change reaches the turns already running within this.
const budgetCacheFor = 5 * time.Second

// restopAfter is how long a turn asked to stop may keep running before the
// watch asks again (its worker may have missed the request).
const restopAfter = 30 * time.Second

// budgetWatch enforces budgets on running turns; see above.
type budgetWatch struct {
	m          *Manager
	queue      *tenantSet
	withTenant bool // the metric carries the tenant (CLOPEN_METRICS_TENANT)
	log        *slog.Logger

	mu       sync.Mutex
	cache    map[string]cachedBudgets
	stopping map[string]time.Time // run → when the watch asked it to stop
	told     map[string]time.Time // tenant/unit/period (or a held run) → the end of the period it was told for
}

type cachedBudgets struct {
	budgets []events.Budget
	at      time.Time
}

func newBudgetWatch(m *Manager, withTenant bool) *budgetWatch {
	return &budgetWatch{m: m, queue: newTenantSet(), withTenant: withTenant, log: m.log,
		cache: map[string]cachedBudgets{}, stopping: map[string]time.Time{}, told: map[string]time.Time{}}
}

// run checks the tenants it is kicked for until ctx ends.
func (w *budgetWatch) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.queue.wake:
		}
		for _, t := range w.queue.take() {
			if err := w.check(ctx, t); err != nil && ctx.Err() == nil {
				w.log.WarnContext(ctx, "budget check (the next usage report checks again)", "tenant", t, "err", err)
			}
		}
	}
}

// check stops tenant's running turns if one of its budgets is spent.
func (w *budgetWatch) check(ctx context.Context, tenant string) error {
	budgets, err := w.budgetsOf(ctx, tenant)
	if err != nil || len(budgets) == 0 {
		return err
	}
	states, err := statesOf(ctx, w.m.db, tenant, budgets, time.Now())
	if err != nil {
		return err
	}
	b, spent := spentOne(states)
	if !spent {
		return nil
	}
	runs, err := store.RunningRuns(ctx, w.m.db, tenant)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, r := range runs {
		if !w.asked(r.ID) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w.stop(ctx, r, b)
		}()
	}
	wg.Wait()
	return nil
}

// stop cancels run r because b is spent: it ends failed with
// budget_exhausted and b's numbers.
func (w *budgetWatch) stop(ctx context.Context, r store.RunRow, b events.BudgetState) {
	msg := b.Summary()
	_, err := w.m.halt(ctx, r, events.VerbCancel,
		events.ControlRequest{Tenant: r.Tenant, RunID: r.ID, Reason: events.StopBudget, Error: msg},
		events.RunState{State: events.RunFailed, Reason: events.StopBudget, Error: msg, ErrorKind: events.KindBudgetExhausted})
	if err != nil {
		w.forget(r.ID) // ask again at the next check
		w.log.WarnContext(ctx, "stop a run over its tenant's budget (the next check retries)", "run_id", r.ID, "tenant", r.Tenant, "err", err)
		return
	}
	w.log.InfoContext(ctx, "run stopped: its tenant's budget is spent", "run_id", r.ID, "tenant", r.Tenant, "session_id", r.SessionID)
	w.spent(ctx, r.Tenant, b, actionStopped)
}

// asked reports whether run is to be asked to stop now, and notes that it
// is: not again while a request is fresh.
func (w *budgetWatch) asked(run string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if at, ok := w.stopping[run]; ok && now.Sub(at) < restopAfter {
		return false
	}
	if len(w.stopping) > 10000 {
		for id, at := range w.stopping {
			if now.Sub(at) >= restopAfter {
				delete(w.stopping, id)
			}
		}
	}
	w.stopping[run] = now
	return true
}

func (w *budgetWatch) forget(run string) {
	w.mu.Lock()
	delete(w.stopping, run)
	w.mu.Unlock()
}

// budgetsOf returns tenant's budgets, read at most every budgetCacheFor.
func (w *budgetWatch) budgetsOf(ctx context.Context, tenant string) ([]events.Budget, error) {
	w.mu.Lock()
	c, ok := w.cache[tenant]
	w.mu.Unlock()
	if ok && time.Since(c.at) < budgetCacheFor {
		return c.budgets, nil
	}
	budgets, err := store.Budgets(ctx, w.m.db, tenant)
	if err != nil {
		return nil, err
	}
	w.remember(tenant, budgets)
	return budgets, nil
}

// remember caches budgets as tenant's, as just read.
func (w *budgetWatch) remember(tenant string, budgets []events.Budget) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.cache) > 100000 {
		clear(w.cache)
	}
	w.cache[tenant] = cachedBudgets{budgets: budgets, at: time.Now()}
}

// spent counts a send refused or a turn stopped because b is spent
// (clopen.budget.exhausted), and logs, once per period, that the tenant
// spent it: the event operators alert on.
func (w *budgetWatch) spent(ctx context.Context, tenant string, b events.BudgetState, action string) {
	if w == nil {
		return // a pipeline without a watch (tests of the writer alone)
	}
	attrs := []attribute.KeyValue{attribute.String("unit", string(b.Unit)), attribute.String("period", string(b.Period)),
		attribute.String("action", action)}
	if w.withTenant {
		attrs = append(attrs, attribute.String("clopen.tenant", tenant))
	}
	budgetExhausted.Add(ctx, 1, metric.WithAttributes(attrs...))
	if w.firstOf(tenant+"/"+string(b.Unit)+"/"+string(b.Period), b.ResetsAt) {
		w.log.WarnContext(ctx, "tenant budget spent: its sends are refused and its running turns stopped until the period resets",
			"tenant", tenant, "budget_unit", b.Unit, "budget_period", b.Period, "budget_limit", b.Limit, "budget_spent", b.Spent,
			"period_start", b.PeriodStart, "resets_at", b.ResetsAt)
	}
}

// firstOf reports whether key is told for the first time in the period
// ending at end; entries of ended periods are dropped as the map grows.
func (w *budgetWatch) firstOf(key string, end time.Time) bool {
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.told) > 10000 {
		for k, e := range w.told {
			if time.Now().After(e) {
				delete(w.told, k)
			}
		}
	}
	first := !w.told[key].Equal(end)
	w.told[key] = end
	return first
}

// budgetHolds reports whether tenant's held run must keep waiting because a
// budget is spent; the run's clients are told why, once a period.
func (d *dispatcher) budgetHolds(ctx context.Context, tx pgx.Tx, tenant, run string) (bool, error) {
	states, err := budgetStates(ctx, tx, tenant, time.Now())
	if err != nil {
		return false, err
	}
	b, spent := spentOne(states)
	if !spent {
		return false, nil
	}
	if d.watch.firstOf("held:"+run, b.ResetsAt) {
		r, err := store.TenantRun(ctx, tx, tenant, run)
		if err == nil {
			d.publishQueued(background(ctx), r, "waiting for the tenant's budget: "+b.Summary())
		}
	}
	return true, nil
}
