package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
)

const keyCols = `id, name, prefix, user_id, created_at, last_used_at, expires_at, revoked_at`

func scanKey(r pgx.Row) (api.APIKey, error) {
	var k api.APIKey
	err := r.Scan(&k.ID, &k.Name, &k.Prefix, &k.UserID, &k.CreatedAt, &k.LastUsedAt, &k.ExpiresAt, &k.RevokedAt)
	return k, err
}

// CreateKey mints a key for user of tenant and returns it with its secret,
// which is not stored and cannot be shown again.
func (s *Store) CreateKey(ctx context.Context, tenant, user, name string, expires *time.Time) (api.NewAPIKey, error) {
	name = strings.TrimSpace(name)
	switch {
	case len(name) > 200:
		return api.NewAPIKey{}, apierr.New(apierr.ErrInvalid, "name: at most 200 characters")
	case expires != nil && !expires.After(time.Now()):
		return api.NewAPIKey{}, apierr.New(apierr.ErrInvalid, "expiresAt: %s is in the past", expires.Format(time.RFC3339))
	}
	if _, err := s.User(ctx, tenant, user); err != nil {
		return api.NewAPIKey{}, err
	}
	secret, prefix, hash := MintKey()
	k, err := scanKey(s.db.QueryRow(ctx, `INSERT INTO gateway.api_keys (id, tenant_id, user_id, name, prefix, hash, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+keyCols, newID(), tenant, user, name, prefix, hash, expires))
	if err != nil {
		return api.NewAPIKey{}, fmt.Errorf("insert api key: %w", err)
	}
	return api.NewAPIKey{APIKey: k, Key: secret}, nil
}

// ListKeys returns the keys of user in tenant, newest first.
func (s *Store) ListKeys(ctx context.Context, tenant, user string) ([]api.APIKey, error) {
	rows, err := s.db.Query(ctx, `SELECT `+keyCols+` FROM gateway.api_keys
		WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at DESC, id`, tenant, user)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (api.APIKey, error) { return scanKey(r) })
}

// RevokeKey revokes key id of tenant. With owner non-empty, only a key of
// that user may be revoked; any other is ErrNotFound. Revoking twice is not
// an error.
func (s *Store) RevokeKey(ctx context.Context, tenant, id, owner string) error {
	if !validID(id) {
		return notFound("api key", id)
	}
	tag, err := s.db.Exec(ctx, `UPDATE gateway.api_keys SET revoked_at = coalesce(revoked_at, now())
		WHERE tenant_id = $1 AND id = $2 AND ($3 = '' OR user_id::text = $3)`, tenant, id, owner)
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("api key", id)
	}
	return nil
}

// KeyStatus is what a key lookup learns besides the principal.
type KeyStatus struct {
	ExpiresAt *time.Time
	RevokedAt *time.Time
}

// LookupKey resolves a secret to its principal and status. It is the one
// query not scoped by tenant: the key is what names the tenant. An unknown
// key is ErrNotFound.
func (s *Store) LookupKey(ctx context.Context, secret string) (Principal, KeyStatus, error) {
	var p Principal
	var st KeyStatus
	err := s.db.QueryRow(ctx, `SELECT k.id, k.tenant_id, u.id, u.name, u.email, u.role, k.expires_at, k.revoked_at
		FROM gateway.api_keys k JOIN gateway.users u ON u.tenant_id = k.tenant_id AND u.id = k.user_id
		WHERE k.hash = $1`, HashKey(secret)).
		Scan(&p.KeyID, &p.TenantID, &p.UserID, &p.UserName, &p.Email, &p.Role, &st.ExpiresAt, &st.RevokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, st, apierr.New(apierr.ErrNotFound, "api key not found")
	}
	if err != nil {
		return p, st, fmt.Errorf("look up api key: %w", err)
	}
	return p, st, nil
}

// TouchKey records that key id of tenant was used, unless it already was in
// the last minute (so busy keys do not write on every request, even across
// replicas).
func (s *Store) TouchKey(ctx context.Context, tenant, id string) error {
	_, err := s.db.Exec(ctx, `UPDATE gateway.api_keys SET last_used_at = now()
		WHERE tenant_id = $1 AND id = $2 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, tenant, id)
	if err != nil {
		return fmt.Errorf("touch api key: %w", err)
	}
	return nil
}
