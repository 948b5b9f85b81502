package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Limits are a tenant's admission limits: how many of its runs may be
// dispatched and unfinished at once, and how many may wait undispatched
// (held for admission or queued behind their session's active run).
type Limits struct {
	MaxConcurrent, MaxQueued int
}

// Override is a tenant's row of tenant_limits: a nil limit is the default.
type Override struct {
	MaxConcurrent, MaxQueued *int
}

// Admission is what a tenant's admission decision is made from.
type Admission struct {
	Limits
	Active  int // dispatched and unfinished
	Waiting int // undispatched and unfinished
	Held    int // of Waiting, held for admission
}

// Full reports whether the tenant has no room for another dispatched run.
func (a Admission) Full() bool { return a.Active >= a.MaxConcurrent }

// LockTenant takes the transaction-scoped advisory lock that serialises the
// admission decisions of tenant. It is taken before any session row lock.
func LockTenant(ctx context.Context, tx pgx.Tx, tenant string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('streammgr.admission:' || $1, 0))`, tenant)
	return err
}

const unfinished = `state NOT IN ('completed', 'failed', 'cancelled', 'lost')`

// TenantAdmission reads tenant's limits (defaults where it has none) and
// counts its unfinished runs. Exact only under LockTenant.
func TenantAdmission(ctx context.Context, db DB, tenant string, defaults Limits) (Admission, error) {
	a := Admission{Limits: defaults}
	err := db.QueryRow(ctx, `SELECT coalesce((SELECT max_concurrent FROM streammgr.tenant_limits WHERE tenant_id = $1), $2),
		coalesce((SELECT max_queued FROM streammgr.tenant_limits WHERE tenant_id = $1), $3),
		count(*) FILTER (WHERE dispatched_at IS NOT NULL),
		count(*) FILTER (WHERE dispatched_at IS NULL),
		count(*) FILTER (WHERE dispatched_at IS NULL AND held_at IS NOT NULL)
		FROM streammgr.runs WHERE tenant_id = $1 AND `+unfinished, tenant, defaults.MaxConcurrent, defaults.MaxQueued).
		Scan(&a.MaxConcurrent, &a.MaxQueued, &a.Active, &a.Waiting, &a.Held)
	if err != nil {
		return Admission{}, fmt.Errorf("tenant admission: %w", err)
	}
	return a, nil
}

// Hold makes run the active run of its session without dispatching it: it
// waits for its tenant's admission.
func Hold(ctx context.Context, tx pgx.Tx, session, run string, at time.Time) error {
	if _, err := tx.Exec(ctx, `UPDATE streammgr.runs SET held_at = greatest($2::timestamptz, queued_at) WHERE id = $1`, run, at); err != nil {
		return fmt.Errorf("hold run: %w", err)
	}
	return SetActiveRun(ctx, tx, session, run)
}

// OldestHeld returns the run of tenant that has waited for admission the
// longest (by the time it was sent), and its session.
func OldestHeld(ctx context.Context, db DB, tenant string) (run, session string, ok bool, err error) {
	err = db.QueryRow(ctx, `SELECT id::text, session_id::text FROM streammgr.runs
		WHERE tenant_id = $1 AND state = 'queued' AND dispatched_at IS NULL AND held_at IS NOT NULL
		ORDER BY queued_at, id LIMIT 1`, tenant).Scan(&run, &session)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	return run, session, err == nil, err
}

// LockHeld locks run, which must still be held as the active run of its
// session (locked by the caller first), and returns it.
func LockHeld(ctx context.Context, tx pgx.Tx, l Locked, run string) (RunRow, bool, error) {
	if l.ActiveRunID != run {
		return RunRow{}, false, nil
	}
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM streammgr.runs
		WHERE id = $1 AND state = 'queued' AND dispatched_at IS NULL AND held_at IS NOT NULL FOR UPDATE`, run))
	if errors.Is(err, ErrNotFound) {
		return RunRow{}, false, nil
	}
	return r, err == nil, err
}

// HeldTenants lists the tenants with runs held for admission: the sweeper
// admits what it can of each.
func HeldTenants(ctx context.Context, db DB) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT DISTINCT tenant_id::text FROM streammgr.runs
		WHERE state = 'queued' AND dispatched_at IS NULL AND held_at IS NOT NULL LIMIT 10000`)
	if err != nil {
		return nil, fmt.Errorf("held tenants: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// SetLimits stores tenant's override; a nil limit is the default. An
// override with neither limit is removed.
func SetLimits(ctx context.Context, db DB, tenant string, o Override) error {
	if o.MaxConcurrent == nil && o.MaxQueued == nil {
		_, err := db.Exec(ctx, `DELETE FROM streammgr.tenant_limits WHERE tenant_id = $1`, tenant)
		return err
	}
	_, err := db.Exec(ctx, `INSERT INTO streammgr.tenant_limits (tenant_id, max_concurrent, max_queued) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id) DO UPDATE SET max_concurrent = $2, max_queued = $3, updated_at = now()`,
		tenant, o.MaxConcurrent, o.MaxQueued)
	return err
}

// LimitsOf returns tenant's override (nil limits where it has none).
func LimitsOf(ctx context.Context, db DB, tenant string) (Override, error) {
	var o Override
	err := db.QueryRow(ctx, `SELECT max_concurrent, max_queued FROM streammgr.tenant_limits WHERE tenant_id = $1`, tenant).
		Scan(&o.MaxConcurrent, &o.MaxQueued)
	if errors.Is(err, pgx.ErrNoRows) {
		return Override{}, nil
	}
	return o, err
}
