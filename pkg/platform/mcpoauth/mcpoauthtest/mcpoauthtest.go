// Package mcpoauthtest is the conformance suite of mcpoauth.PendingStore:
// the in-memory store runs it, and so must any durable one.
package mcpoauthtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/platform/mcpoauth"
)

// RunPendingStore checks a PendingStore: a record put is taken back whole
// once and only once, even by racing callers, and an unknown nonce is
// ErrNoPending. newStore returns an empty store for each subtest.
func RunPendingStore(t *testing.T, newStore func(t *testing.T) mcpoauth.PendingStore) {
	ctx := context.Background()
	record := func(nonce string) mcpoauth.Pending {
		return mcpoauth.Pending{
			Nonce: nonce, Tenant: "tenant-a", Slug: "docs",
			Server: mcpoauth.Server{
				Resource: "https://mcp.example/mcp", Issuer: "https://as.example",
				AuthorizationEndpoint: "https://as.example/authorize", TokenEndpoint: "https://as.example/token",
				Scopes: []string{"mcp:tools"}, ClientID: "client", ClientSecret: "secret",
			},
			Verifier: "verifier-" + mcpoauth.Secret(nonce),
			Expires:  time.Now().Add(10 * time.Minute).Truncate(time.Second),
		}
	}

	t.Run("put then take", func(t *testing.T) {
		s := newStore(t)
		want := record("n1")
		if err := s.Put(ctx, want); err != nil {
			t.Fatalf("Put: %v", err)
		}
		if err := s.Put(ctx, record("n2")); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := s.Take(ctx, "n1")
		if err != nil {
			t.Fatalf("Take: %v", err)
		}
		if got.Nonce != want.Nonce || got.Tenant != want.Tenant || got.Slug != want.Slug ||
			got.Verifier != want.Verifier || !got.Expires.Equal(want.Expires) ||
			got.Server.String() != want.Server.String() || got.Server.ClientSecret != want.Server.ClientSecret {
			t.Fatalf("Take = %#v, want %#v", got, want)
		}
		if _, err := s.Take(ctx, "n1"); !errors.Is(err, mcpoauth.ErrNoPending) {
			t.Fatalf("second Take: err = %v, want ErrNoPending", err)
		}
		if got, err := s.Take(ctx, "n2"); err != nil || got.Nonce != "n2" {
			t.Fatalf("Take of the other record = %v, %v", got.Nonce, err)
		}
	})

	t.Run("unknown nonce", func(t *testing.T) {
		if _, err := newStore(t).Take(ctx, "never"); !errors.Is(err, mcpoauth.ErrNoPending) {
			t.Fatalf("Take: err = %v, want ErrNoPending", err)
		}
	})

	t.Run("racing takes", func(t *testing.T) {
		s := newStore(t)
		if err := s.Put(ctx, record("race")); err != nil {
			t.Fatalf("Put: %v", err)
		}
		const n = 8
		var wg sync.WaitGroup
		won := make(chan struct{}, n)
		for range n {
			wg.Go(func() {
				if _, err := s.Take(ctx, "race"); err == nil {
					won <- struct{}{}
				} else if !errors.Is(err, mcpoauth.ErrNoPending) {
					t.Errorf("Take: %v", err)
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("%d of %d racing Takes got the record, want 1", len(won), n)
		}
	})
}
