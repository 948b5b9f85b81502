package artifacts

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/platform/mcpoauth"
	"clopen.dev/pkg/platform/mcpoauth/mcpoauthtest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

func newOAuthPending(t *testing.T) (store.OAuthPending, *store.Store) {
	t.Helper()
	key, _, err := seal.Generate()
	if err != nil {
		t.Fatal(err)
	}
	st := &store.Store{DB: pgtest.New(t, Schema), Keys: seal.Ring(key)}
	return store.OAuthPending{S: st}, st
}

// TestOAuthPendingStore: the Postgres store of pending MCP sign-ins passes
// mcpoauth's conformance suite (a record back whole once, racing takes won
// once, an unknown nonce refused).
func TestOAuthPendingStore(t *testing.T) {
	mcpoauthtest.RunPendingStore(t, func(t *testing.T) mcpoauth.PendingStore {
		p, _ := newOAuthPending(t)
		return p
	})
}

// TestOAuthPendingSealedAndExpiring: a pending record's verifier and
// client secret are sealed at rest, bound to their nonce and tenant (an
// envelope copied onto another nonce does not open), and an expired record
// is not taken.
func TestOAuthPendingSealedAndExpiring(t *testing.T) {
	ctx := context.Background()
	p, st := newOAuthPending(t)
	rec := func(nonce string, expires time.Time) mcpoauth.Pending {
		return mcpoauth.Pending{Nonce: nonce, Tenant: "tenant-a", Slug: "docs", Expires: expires,
			Server:   mcpoauth.Server{Resource: "https://mcp.example/mcp", ClientID: "client", ClientSecret: "client-secret-1"},
			Verifier: "verifier-secret-2"}
	}
	for _, r := range []mcpoauth.Pending{rec("n1", time.Now().Add(time.Minute)), rec("n2", time.Now().Add(time.Minute)),
		rec("old", time.Now().Add(-time.Second))} {
		if err := p.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var raw string
	if err := st.DB.QueryRow(ctx, `SELECT string_agg(credential, ' ') FROM artifacts.mcp_oauth_pending`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, "secret") || !strings.HasPrefix(raw, "v1:") {
		t.Errorf("pending records are not sealed: %q", raw)
	}
	if _, err := p.Take(ctx, "old"); !errors.Is(err, mcpoauth.ErrNoPending) {
		t.Errorf("an expired record: %v, want ErrNoPending", err)
	}
	if _, err := st.DB.Exec(ctx, `UPDATE artifacts.mcp_oauth_pending SET credential = (SELECT credential FROM
		artifacts.mcp_oauth_pending WHERE nonce = 'n1') WHERE nonce = 'n2'`); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Take(ctx, "n2"); err == nil || errors.Is(err, mcpoauth.ErrNoPending) {
		t.Errorf("n1's envelope under nonce n2 = %+v, %v; want it not to open", got, err)
	}
	if got, err := p.Take(ctx, "n1"); err != nil || got.Verifier != "verifier-secret-2" || got.Server.ClientSecret != "client-secret-1" {
		t.Errorf("n1 = %+v, %v", got, err)
	}
}

// TestOAuthPendingRotates: a key rotation re-seals pending records, which
// the new key alone then opens.
func TestOAuthPendingRotates(t *testing.T) {
	ctx := context.Background()
	p, st := newOAuthPending(t)
	if err := p.Put(ctx, mcpoauth.Pending{Nonce: "n1", Tenant: "tenant-a", Slug: "docs", Verifier: "v", Expires: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	next, _, _ := seal.Generate()
	var n int
	err := pgx.BeginFunc(ctx, st.DB, func(tx pgx.Tx) error {
		var err error
		n, err = store.RotateKey(ctx, tx, st.Keys, next)
		return err
	})
	if err != nil || n != 1 {
		t.Fatalf("RotateKey = %d, %v; want the pending record re-sealed", n, err)
	}
	rotated := store.OAuthPending{S: &store.Store{DB: st.DB, Keys: seal.Ring(next)}}
	if got, err := rotated.Take(ctx, "n1"); err != nil || got.Verifier != "v" {
		t.Errorf("after rotation = %+v, %v", got, err)
	}
}
