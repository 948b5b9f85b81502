package streammgr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// Fair admission. A tenant's runs are dispatched (published on JOBS, where
// any worker may claim them) only up to its limit of concurrent runs; a run
// sent into an idle session while its tenant is at the limit is held: it
// becomes the session's active run (so the session's later turns queue
// behind it, as always) without being dispatched. When one of the tenant's
// runs ends, the admitter dispatches the tenant's oldest held run. Every
// admission decision is taken under the tenant's advisory lock (always
// before any session row lock); the event writer, which holds session rows
// while it commits, never takes it: it holds the session's next turn and
// leaves the admission to the admitter, after its commit.

// DefaultTenantLimits are the limits of a tenant without an override.
var DefaultTenantLimits = store.Limits{MaxConcurrent: 4, MaxQueued: 64}

// Bounds of a limit an operator may set.
const (
	maxConcurrentLimit = 10000
	maxQueuedLimit     = 100000
)

// queueFullRetry is the Retry-After of a refusal: about the time a few runs
// take to end.
const queueFullRetry = 30 * time.Second

// tenantSet is the tenants a loop has work for (the admitter's admission
// passes, the budget watch's checks), and its wake-up: whoever has work
// kicks it without waiting, the loop takes what piled up.
type tenantSet struct {
	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
}

func newTenantSet() *tenantSet {
	return &tenantSet{pending: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// kick adds tenants to the set and wakes its loop; it never blocks.
func (a *tenantSet) kick(tenants ...string) {
	a.mu.Lock()
	for _, t := range tenants {
		a.pending[t] = true
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// take empties the set and returns what it held.
func (a *tenantSet) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.pending))
	for t := range a.pending {
		out = append(out, t)
	}
	clear(a.pending)
	return out
}

// admitLoop runs the admitter until ctx ends; every sweepEvery it kicks the
// tenants with held runs, so a run whose admission was lost (its ending
// streammgr died after the commit) is admitted all the same.
func (d *dispatcher) admitLoop(ctx context.Context, sweepEvery time.Duration) error {
	sweep := time.NewTicker(sweepEvery)
	defer sweep.Stop()
	if tenants, err := store.HeldTenants(ctx, d.db); err == nil {
		d.admit.kick(tenants...) // what waited while no streammgr ran
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.admit.wake:
		case <-sweep.C:
			tenants, err := store.HeldTenants(ctx, d.db)
			if err != nil {
				d.log.WarnContext(ctx, "admission sweep", "err", err)
				continue
			}
			d.admit.kick(tenants...)
			continue
		}
		for _, t := range d.admit.take() {
			d.admitTenant(ctx, t)
		}
	}
}

// admitTenant dispatches tenant's held runs, oldest first, while it has room.
func (d *dispatcher) admitTenant(ctx context.Context, tenant string) {
	for range 1000 { // bounded: a pass admits at most this many
		fx, again, err := d.admitOne(ctx, tenant)
		if err != nil {
			if ctx.Err() == nil {
				d.log.WarnContext(ctx, "admit (the sweeper will retry)", "tenant", tenant, "err", err)
			}
			return
		}
		if fx != nil {
			runsAdmitted.Add(ctx, 1)
			d.afterDispatch(ctx, fx)
		}
		if !again {
			return
		}
	}
}

// admitOne dispatches tenant's oldest held run if the tenant has room; again
// says whether another may follow.
func (d *dispatcher) admitOne(ctx context.Context, tenant string) (fx *dispatched, again bool, err error) {
	err = pgx.BeginFunc(ctx, d.db, func(tx pgx.Tx) error {
		if err := store.LockTenant(ctx, tx, tenant); err != nil {
			return err
		}
		a, err := store.TenantAdmission(ctx, tx, tenant, d.limits)
		if err != nil || a.Full() || a.Held == 0 {
			return err
		}
		run, session, ok, err := store.OldestHeld(ctx, tx, tenant)
		if err != nil || !ok {
			return err
		}
		if held, err := d.budgetHolds(ctx, tx, tenant, run); err != nil || held {
			return err // it waits for the next period or a higher budget
		}
		again = true
		l, err := store.LockSession(ctx, tx, tenant, session)
		if err != nil {
			return ignoreNotFound(err) // deleted meanwhile: on to the next
		}
		r, ok, err := store.LockHeld(ctx, tx, l, run)
		if err != nil || !ok {
			return err // cancelled meanwhile
		}
		fx, err = d.dispatchLocked(ctx, tx, l, r, nil)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return fx, again, nil
}

// admission is start's decision for a new run, taken under the tenant's
// lock: dispatch it, hold it, or (when it would wait and the tenant's queue
// is full) refuse it.
type admission struct {
	hold   bool
	reason string // why a held run waits, for the client
}

// ignoreNotFound is nil for store.ErrNotFound.
func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// uuidOf parses a tenant id.
func uuidOf(s string) (uuid.UUID, error) { return uuid.Parse(s) }

// decide takes start's decision for a new run of tenant (whose lock tx
// holds): a spent budget refuses it (402 budget_exhausted: nothing is
// queued), a full queue refuses it (429), a tenant at its limit holds it.
func (d *dispatcher) decide(ctx context.Context, tx pgx.Tx, tenant string, sessionBusy bool) (admission, error) {
	budgets, err := store.Budgets(ctx, tx, tenant)
	if err != nil {
		return admission{}, err
	}
	d.watch.remember(tenant, budgets) // the turn runs under the budgets it was admitted by
	states, err := statesOf(ctx, tx, tenant, budgets, time.Now())
	if err != nil {
		return admission{}, err
	}
	if b, spent := spentOne(states); spent {
		d.watch.spent(ctx, tenant, b, actionRefused)
		return admission{}, budgetRefusal(b)
	}
	a, err := store.TenantAdmission(ctx, tx, tenant, d.limits)
	if err != nil {
		return admission{}, err
	}
	// Held runs go first: a new run takes no free slot from them.
	hold := !sessionBusy && (a.Full() || a.Held > 0)
	if (sessionBusy || hold) && a.Waiting >= a.MaxQueued {
		e := svc.Errorf(http.StatusTooManyRequests, "tenant_queue_full",
			"the tenant has %d runs waiting, its limit (%d concurrent, %d waiting); send again once some have ended",
			a.Waiting, a.MaxConcurrent, a.MaxQueued)
		e.RetryAfter = int(queueFullRetry.Seconds())
		return admission{}, e
	}
	if !hold {
		return admission{}, nil
	}
	return admission{hold: true, reason: fmt.Sprintf("tenant at its limit of %d concurrent runs", a.MaxConcurrent)}, nil
}

// publishQueued tells the session's clients that run waits, and why: held
// for its tenant's admission, or behind the session's active run.
func (d *dispatcher) publishQueued(ctx context.Context, run store.RunRow, reason string) {
	d.bus.publishChat(ctx, run.Tenant, []events.ChatEvent{{Type: events.ChatTypeRunState, ChatSessionID: run.SessionID,
		ProjectID: run.ProjectID, RunID: run.ID, Timestamp: run.QueuedAt,
		Data: events.ChatRunState{State: events.RunQueued, Reason: reason}}})
}

// TenantLimits is a tenant's admission limits as an operator sets them: a
// nil limit is the default (CLOPEN_TENANT_MAX_CONCURRENT,
// CLOPEN_TENANT_MAX_QUEUED).
type TenantLimits struct {
	MaxConcurrent *int `json:"maxConcurrent"`
	MaxQueued     *int `json:"maxQueued"`
}

// SetTenantLimits stores tenant's limits (`clopen admin tenant-limits`),
// recording the change in the audit log as the operator's. They apply to
// the next admission decision; runs held under a lower limit are admitted
// by the next sweep.
func SetTenantLimits(ctx context.Context, db *pgxpool.Pool, tenant string, l TenantLimits) error {
	if err := l.validate(); err != nil {
		return err
	}
	if _, err := uuidOf(tenant); err != nil {
		return svc.Invalid("tenant: not a tenant id")
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := store.LockTenant(ctx, tx, tenant); err != nil {
			return err
		}
		was, err := store.LimitsOf(ctx, tx, tenant)
		if err != nil {
			return err
		}
		if err := store.SetLimits(ctx, tx, tenant, store.Override{MaxConcurrent: l.MaxConcurrent, MaxQueued: l.MaxQueued}); err != nil {
			return err
		}
		return Audit.Record(ctx, tx, audit.Entry{Tenant: tenant, Actor: audit.Operator, Action: "tenant_limits.set",
			Target: events.AuditTarget{Type: "tenant_limits", ID: tenant},
			Before: TenantLimits{MaxConcurrent: was.MaxConcurrent, MaxQueued: was.MaxQueued}, After: l})
	})
}

// TenantLimitsOf returns tenant's override (nil where it has the default).
func TenantLimitsOf(ctx context.Context, db *pgxpool.Pool, tenant string) (TenantLimits, error) {
	if _, err := uuidOf(tenant); err != nil {
		return TenantLimits{}, svc.Invalid("tenant: not a tenant id")
	}
	o, err := store.LimitsOf(ctx, db, tenant)
	return TenantLimits{MaxConcurrent: o.MaxConcurrent, MaxQueued: o.MaxQueued}, err
}

func (l TenantLimits) validate() error {
	if l.MaxConcurrent != nil && (*l.MaxConcurrent < 1 || *l.MaxConcurrent > maxConcurrentLimit) {
		return svc.Invalid("maxConcurrent: %d is out of range; want 1 to %d", *l.MaxConcurrent, maxConcurrentLimit)
	}
	if l.MaxQueued != nil && (*l.MaxQueued < 0 || *l.MaxQueued > maxQueuedLimit) {
		return svc.Invalid("maxQueued: %d is out of range; want 0 to %d", *l.MaxQueued, maxQueuedLimit)
	}
	return nil
}
