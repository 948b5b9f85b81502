package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
)

const userCols = `id, email, name, role, created_at`

func scanUser(r pgx.Row) (api.User, error) {
	var u api.User
	err := r.Scan(&u.ID, &u.Email, &u.Name, &u.Role, &u.CreatedAt)
	return u, err
}

// CreateUser adds a user to tenant, as actor. An email already used in the
// tenant is ErrConflict.
func (s *Store) CreateUser(ctx context.Context, actor events.AuditActor, tenant string, in api.CreateUser) (api.User, error) {
	in.Email = strings.TrimSpace(in.Email)
	in.Name = strings.TrimSpace(in.Name)
	if in.Role == "" {
		in.Role = api.RoleMember
	}
	switch {
	case !strings.Contains(in.Email, "@") || len(in.Email) > 320:
		return api.User{}, apierr.New(apierr.ErrInvalid, "email: %q is not an email address", in.Email)
	case in.Name == "" || len(in.Name) > 200:
		return api.User{}, apierr.New(apierr.ErrInvalid, "name: want 1 to 200 characters")
	case in.Role != api.RoleAdmin && in.Role != api.RoleMember:
		return api.User{}, apierr.New(apierr.ErrInvalid, "role: want admin or member, not %q", in.Role)
	}
	var u api.User
	err := s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		var err error
		u, err = scanUser(tx.QueryRow(ctx, `INSERT INTO gateway.users (id, tenant_id, email, name, role)
			VALUES ($1, $2, $3, $4, $5) RETURNING `+userCols, newID(), tenant, in.Email, in.Name, in.Role))
		return []audit.Entry{{Tenant: tenant, Actor: actor, Action: "user.create",
			Target: events.AuditTarget{Type: "user", ID: u.ID, Name: u.Email}, After: u}}, err
	})
	if uniqueViolation(err) {
		return api.User{}, apierr.New(apierr.ErrConflict, "a user with email %q already exists", in.Email)
	}
	if err != nil {
		return api.User{}, fmt.Errorf("insert user: %w", err)
	}
	return u, nil
}

// User returns user id of tenant.
func (s *Store) User(ctx context.Context, tenant, id string) (api.User, error) {
	if !validID(id) {
		return api.User{}, notFound("user", id)
	}
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userCols+` FROM gateway.users WHERE tenant_id = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return u, notFound("user", id)
	}
	if err != nil {
		return u, fmt.Errorf("select user: %w", err)
	}
	return u, nil
}

// UserByEmail returns the user of tenant with that email.
func (s *Store) UserByEmail(ctx context.Context, tenant, email string) (api.User, error) {
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userCols+` FROM gateway.users WHERE tenant_id = $1 AND email = $2`, tenant, email))
	if errors.Is(err, pgx.ErrNoRows) {
		return u, apierr.New(apierr.ErrNotFound, "user %q not found", email)
	}
	if err != nil {
		return u, fmt.Errorf("select user: %w", err)
	}
	return u, nil
}

// ListUsers returns the users of tenant, by email.
func (s *Store) ListUsers(ctx context.Context, tenant string) ([]api.User, error) {
	rows, err := s.db.Query(ctx, `SELECT `+userCols+` FROM gateway.users WHERE tenant_id = $1 ORDER BY email`, tenant)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (api.User, error) { return scanUser(r) })
}
