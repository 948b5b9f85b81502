package mcpoauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/platform/mcpoauth/authserver"
)

// Each forged, expired or misplaced callback is refused with ErrState, and
// the pending authorization survives it: the user's own callback still
// completes afterwards.
func TestCompleteRefusesState(t *testing.T) {
	tests := []struct {
		name   string
		tenant string
		edit   func(t *testing.T, q url.Values)
		clock  time.Duration // how long after Start the callback arrives
	}{
		{name: "other tenant", tenant: "tenant-b"},
		{name: "expired", tenant: "tenant-a", clock: 11 * time.Minute},
		{name: "tenant rewritten in the payload", tenant: "tenant-b", edit: func(t *testing.T, q url.Values) {
			q.Set("state", rewriteState(t, q.Get("state"), func(c *stateClaims) { c.Tenant = "tenant-b" }))
		}},
		{name: "expiry extended in the payload", tenant: "tenant-a", clock: 11 * time.Minute, edit: func(t *testing.T, q url.Values) {
			q.Set("state", rewriteState(t, q.Get("state"), func(c *stateClaims) { c.Expires += 3600 }))
		}},
		{name: "signed with another key", tenant: "tenant-a", edit: func(t *testing.T, q url.Values) {
			c := readState(t, q.Get("state"))
			q.Set("state", signState([]byte("another key, 32 bytes long......"), c))
		}},
		{name: "no state", tenant: "tenant-a", edit: func(_ *testing.T, q url.Values) { q.Del("state") }},
		{name: "garbage state", tenant: "tenant-a", edit: func(_ *testing.T, q url.Values) { q.Set("state", "x.y") }},
		{name: "another issuer in the callback", tenant: "tenant-a", edit: func(_ *testing.T, q url.Values) { q.Set("iss", "https://evil.example") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := authserver.NewAuthServer(t, "")
			m := authserver.NewMCPServer(t, as, nil)
			now := time.Now()
			c := newClient(t, func(cfg *Config) { cfg.Now = func() time.Time { return now } })
			cb := consent(t, connect(t, c, m, "tenant-a"))
			attack := url.Values{}
			for k, v := range cb {
				attack[k] = append([]string(nil), v...)
			}
			if tt.edit != nil {
				tt.edit(t, attack)
			}
			now = now.Add(tt.clock)
			if g, err := c.Complete(context.Background(), tt.tenant, attack); !errors.Is(err, ErrState) {
				t.Fatalf("Complete = %v, %v; want ErrState", g, err)
			}
			if tt.clock > 0 || tt.name == "another issuer in the callback" {
				return // the authorization itself is over
			}
			if _, err := c.Complete(context.Background(), "tenant-a", cb); err != nil {
				t.Errorf("the user's own callback after the refused one: %v", err)
			}
		})
	}
}

func readState(t *testing.T, state string) stateClaims {
	t.Helper()
	p, _, _ := strings.Cut(state, ".")
	b, err := base64.RawURLEncoding.DecodeString(p)
	var c stateClaims
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		t.Fatalf("read state %q: %v", state, err)
	}
	return c
}

// rewriteState edits the claims and keeps the old signature.
func rewriteState(t *testing.T, state string, edit func(*stateClaims)) string {
	t.Helper()
	c := readState(t, state)
	edit(&c)
	b, _ := json.Marshal(c)
	_, sig, _ := strings.Cut(state, ".")
	return base64.RawURLEncoding.EncodeToString(b) + "." + sig
}

func TestCompleteDenied(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	m := authserver.NewMCPServer(t, as, nil)
	c := newClient(t, nil)
	cb := consent(t, connect(t, c, m, "tenant-a"))
	cb.Del("code")
	cb.Set("error", "access_denied")
	if _, err := c.Complete(context.Background(), "tenant-a", cb); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("Complete of a refused consent: err = %v, want ErrDenied naming access_denied", err)
	}
}

func TestNewRefusesConfig(t *testing.T) {
	good := Config{RedirectURL: testRedirect, StateKey: make([]byte, 32), Pending: &MemPending{}}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{name: "relative redirect", edit: func(c *Config) { c.RedirectURL = "/v1/mcp-oauth/callback" }},
		{name: "short key", edit: func(c *Config) { c.StateKey = make([]byte, 16) }},
		{name: "no store", edit: func(c *Config) { c.Pending = nil }},
	}
	if _, err := New(good); err != nil {
		t.Fatalf("New(good) = %v", err)
	}
	for _, tt := range tests {
		cfg := good
		tt.edit(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("New with %s succeeded, want an error", tt.name)
		}
	}
}
