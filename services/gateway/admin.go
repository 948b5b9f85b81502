package gateway

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/platform/audit"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/identity"
)

// The functions below are the operator's direct access to the gateway schema
// (`clopen admin`): they bypass API keys and tenancy, so only a holder of
// the database URL can call them. Errors are classified as the API's are
// (a duplicate is a conflict, an unknown tenant or user not found).

// CreateTenant creates a tenant with a unique slug.
func CreateTenant(ctx context.Context, db *pgxpool.Pool, slug, name string) (api.Tenant, error) {
	return identity.New(db).CreateTenant(ctx, slug, name)
}

// ListTenants returns every tenant, by slug.
func ListTenants(ctx context.Context, db *pgxpool.Pool) ([]api.Tenant, error) {
	return identity.New(db).ListTenants(ctx)
}

// CreateUser adds a user (role admin or member) to the tenant with slug.
func CreateUser(ctx context.Context, db *pgxpool.Pool, tenantSlug string, in api.CreateUser) (api.User, error) {
	s := identity.New(db)
	t, err := s.TenantBySlug(ctx, tenantSlug)
	if err != nil {
		return api.User{}, err
	}
	return s.CreateUser(ctx, audit.Operator, t.ID, in)
}

// CreateKey mints an API key for the user with email in the tenant with
// slug. The secret is in the result only.
func CreateKey(ctx context.Context, db *pgxpool.Pool, tenantSlug, email, name string) (api.NewAPIKey, error) {
	s := identity.New(db)
	t, err := s.TenantBySlug(ctx, tenantSlug)
	if err != nil {
		return api.NewAPIKey{}, err
	}
	u, err := s.UserByEmail(ctx, t.ID, email)
	if err != nil {
		return api.NewAPIKey{}, err
	}
	return s.CreateKey(ctx, audit.Operator, t.ID, u.ID, name, nil)
}

// LiveSnapshots adds to live the snapshots tenant's projects still need:
// their bases. A snapshot garbage collection keeps these.
func LiveSnapshots(ctx context.Context, db *pgxpool.Pool, tenant string, live map[string]bool) error {
	if _, err := uuid.Parse(tenant); err != nil {
		return nil // not a tenant id: no project of it here
	}
	rows, err := db.Query(ctx, `SELECT base_snapshot_id FROM gateway.projects WHERE tenant_id = $1 AND base_snapshot_id IS NOT NULL`, tenant)
	if err != nil {
		return fmt.Errorf("live snapshots: %w", err)
	}
	return pgdb.AddTo(rows, live)
}
