package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/platform/mcpoauth"
)

// OAuthPending keeps the sign-ins to remote MCP servers that were started
// and not yet completed, in artifacts.mcp_oauth_pending, each record sealed
// with the store's key and bound to its tenant and nonce (its PKCE verifier
// and the server's client secret are secrets until the code is redeemed).
// Take deletes the record it returns in the same statement, so of two
// racing callbacks one gets it. Put drops the expired records.
type OAuthPending struct{ S *Store }

var _ mcpoauth.PendingStore = OAuthPending{}

func pendingAD(tenant, nonce string) string { return "mcp_oauth_pending:" + tenant + ":" + nonce }

// Put implements mcpoauth.PendingStore.
func (o OAuthPending) Put(ctx context.Context, p mcpoauth.Pending) error {
	if p.Nonce == "" || p.Tenant == "" {
		return fmt.Errorf("%w: a pending sign-in needs a nonce and a tenant", ErrInvalid)
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return mapErr(pgx.BeginFunc(ctx, o.S.DB, func(tx pgx.Tx) error {
		// The key the database names, under the lock a rotation waits for.
		key, err := o.S.SealingKey(ctx, tx)
		if err != nil {
			return err
		}
		env, err := key.Seal(string(plain), pendingAD(p.Tenant, p.Nonce))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM artifacts.mcp_oauth_pending WHERE expires_at < now()`); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO artifacts.mcp_oauth_pending (nonce, tenant_id, credential, key_fingerprint, expires_at)
			VALUES ($1, $2, $3, $4, $5)`, p.Nonce, p.Tenant, env, key.Fingerprint(), p.Expires)
		return err
	}))
}

// Take implements mcpoauth.PendingStore: an unknown, taken or expired
// nonce is mcpoauth.ErrNoPending.
func (o OAuthPending) Take(ctx context.Context, nonce string) (mcpoauth.Pending, error) {
	var tenant, env string
	var expires time.Time
	err := o.S.DB.QueryRow(ctx, `DELETE FROM artifacts.mcp_oauth_pending WHERE nonce = $1
		RETURNING tenant_id, credential, expires_at`, nonce).Scan(&tenant, &env, &expires)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && time.Now().After(expires)) {
		return mcpoauth.Pending{}, mcpoauth.ErrNoPending
	}
	if err != nil {
		return mcpoauth.Pending{}, mapErr(err)
	}
	plain, err := o.S.Keys.Open(env, pendingAD(tenant, nonce))
	if err != nil {
		return mcpoauth.Pending{}, fmt.Errorf("open pending sign-in: %w", err)
	}
	var p mcpoauth.Pending
	if err := json.Unmarshal([]byte(plain), &p); err != nil {
		return mcpoauth.Pending{}, fmt.Errorf("pending sign-in: %w", err)
	}
	if p.Nonce != nonce || p.Tenant != tenant {
		return mcpoauth.Pending{}, fmt.Errorf("pending sign-in %s: the record names another nonce or tenant", nonce)
	}
	return p, nil
}
