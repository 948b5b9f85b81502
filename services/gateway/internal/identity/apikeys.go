package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
)

const keyCols = `id, name, prefix, user_id, created_at, last_used_at, expires_at, revoked_at`

func scanKey(r pgx.Row) (api.APIKey, error) {
	var k api.APIKey
	err := r.Scan(&k.ID, &k.Name, &k.Prefix, &k.UserID, &k.CreatedAt, &k.LastUsedAt, &k.ExpiresAt, &k.RevokedAt)
	return k, err
}

// CreateKey mints a key for user of tenant, as actor, and returns it with
// its secret, which is not stored (nor audited) and cannot be shown again.
func (s *Store) CreateKey(ctx context.Context, actor events.AuditActor, tenant, user, name string, expires *time.Time) (api.NewAPIKey, error) {
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
	var k api.APIKey
	err := s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		var err error
		k, err = scanKey(tx.QueryRow(ctx, `INSERT INTO gateway.api_keys (id, tenant_id, user_id, name, prefix, hash, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+keyCols, newID(), tenant, user, name, prefix, hash, expires))
		return []audit.Entry{keyEntry(tenant, actor, "apikey.create", nil, &k)}, err
	})
	if err != nil {
		return api.NewAPIKey{}, fmt.Errorf("insert api key: %w", err)
	}
	return api.NewAPIKey{APIKey: k, Key: secret}, nil
}

// keyEntry is an entry about an API key: its id, name, prefix, owner and
// dates, never its secret or hash.
func keyEntry(tenant string, actor events.AuditActor, action string, before, after *api.APIKey) audit.Entry {
	named := after
	if named == nil {
		named = before
	}
	e := audit.Entry{Tenant: tenant, Actor: actor, Action: action, Target: events.AuditTarget{Type: "apikey", ID: named.ID, Name: named.Name}}
	if before != nil {
		e.Before = before
	}
	if after != nil {
		e.After = after
	}
	return e
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

// RevokeKey revokes key id of tenant, as actor. With owner non-empty, only
// a key of that user may be revoked; any other is ErrNotFound. Revoking
// twice is not an error (and records nothing the second time).
func (s *Store) RevokeKey(ctx context.Context, actor events.AuditActor, tenant, id, owner string) error {
	if !validID(id) {
		return notFound("api key", id)
	}
	err := s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		before, err := scanKey(tx.QueryRow(ctx, `SELECT `+keyCols+` FROM gateway.api_keys
			WHERE tenant_id = $1 AND id = $2 AND ($3 = '' OR user_id::text = $3) FOR UPDATE`, tenant, id, owner))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, notFound("api key", id)
		}
		if err != nil || before.RevokedAt != nil {
			return nil, err
		}
		after, err := scanKey(tx.QueryRow(ctx, `UPDATE gateway.api_keys SET revoked_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+keyCols, tenant, id))
		return []audit.Entry{keyEntry(tenant, actor, "apikey.revoke", &before, &after)}, err
	})
	return wrapUnlessClassified("revoke api key", err)
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
