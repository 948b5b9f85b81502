package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
)

// Store reads and writes the gateway schema. It is safe for concurrent use.
type Store struct {
	db *pgxpool.Pool
}

// New returns a store on db, whose gateway schema is migrated.
func New(db *pgxpool.Pool) *Store { return &Store{db: db} }

// newID returns a fresh row id.
func newID() string { return uuid.NewString() }

// validID reports whether id can name a row: ids are UUIDs, and anything
// else cannot exist (so it is not found rather than a database error).
func validID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil && len(id) == 36
}

// notFound builds the not-found error for kind and id.
func notFound(kind, id string) error {
	return apierr.New(apierr.ErrNotFound, "%s %s not found", kind, id)
}

// uniqueViolation reports whether err is a unique-constraint violation.
func uniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}

// CreateTenant creates a tenant, as the operator (there is no route for it).
// A slug in use is ErrConflict.
func (s *Store) CreateTenant(ctx context.Context, slug, name string) (api.Tenant, error) {
	if err := checkSlug(slug); err != nil {
		return api.Tenant{}, err
	}
	if name == "" {
		name = slug
	}
	t := api.Tenant{ID: newID(), Slug: slug, Name: name}
	err := s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		err := tx.QueryRow(ctx, `INSERT INTO gateway.tenants (id, slug, name) VALUES ($1, $2, $3) RETURNING created_at`,
			t.ID, t.Slug, t.Name).Scan(&t.CreatedAt)
		return []audit.Entry{{Tenant: t.ID, Actor: audit.Operator, Action: "tenant.create",
			Target: events.AuditTarget{Type: "tenant", ID: t.ID, Name: t.Slug}, After: t}}, err
	})
	if uniqueViolation(err) {
		return api.Tenant{}, apierr.New(apierr.ErrConflict, "tenant %q already exists", slug)
	}
	if err != nil {
		return api.Tenant{}, fmt.Errorf("insert tenant: %w", err)
	}
	return t, nil
}

// Tenant returns the tenant id.
func (s *Store) Tenant(ctx context.Context, id string) (api.Tenant, error) {
	return s.tenantWhere(ctx, "id = $1", id)
}

// TenantBySlug returns the tenant called slug. Operator commands only: it
// is how they name a tenant.
func (s *Store) TenantBySlug(ctx context.Context, slug string) (api.Tenant, error) {
	t, err := s.tenantWhere(ctx, "slug = $1", slug)
	if errors.Is(err, apierr.ErrNotFound) {
		return t, apierr.New(apierr.ErrNotFound, "tenant %q not found", slug)
	}
	return t, err
}

func (s *Store) tenantWhere(ctx context.Context, cond string, arg string) (api.Tenant, error) {
	var t api.Tenant
	err := s.db.QueryRow(ctx, `SELECT id, slug, name, created_at FROM gateway.tenants WHERE `+cond, arg).
		Scan(&t.ID, &t.Slug, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, notFound("tenant", arg)
	}
	if err != nil {
		return t, fmt.Errorf("select tenant: %w", err)
	}
	return t, nil
}

// ListTenants returns every tenant, by slug. Operator commands only.
func (s *Store) ListTenants(ctx context.Context) ([]api.Tenant, error) {
	rows, err := s.db.Query(ctx, `SELECT id, slug, name, created_at FROM gateway.tenants ORDER BY slug`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (api.Tenant, error) {
		var t api.Tenant
		return t, r.Scan(&t.ID, &t.Slug, &t.Name, &t.CreatedAt)
	})
}

func checkSlug(slug string) error {
	if slug == "" || len(slug) > 63 {
		return apierr.New(apierr.ErrInvalid, "slug: want 1 to 63 characters")
	}
	for _, r := range slug {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return apierr.New(apierr.ErrInvalid, "slug %q: want lower-case letters, digits and -", slug)
		}
	}
	return nil
}
