package gateway_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
)

func TestAuthRefusals(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()

	revoked, err := a.member.c.CreateAPIKey(ctx, api.CreateAPIKey{Name: "revoked"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.member.c.RevokeAPIKey(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	expired, err := a.member.c.CreateAPIKey(ctx, api.CreateAPIKey{Name: "expired"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(ctx, `UPDATE gateway.api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, expired.ID); err != nil {
		t.Fatal(err)
	}
	unknown := "clp_" + strings.Repeat("A", 43)

	tests := []struct {
		name    string
		header  string
		wantMsg string
	}{
		{"no header", "", "missing api key"},
		{"not bearer", "Basic dXNlcjpwYXNz", "missing api key"},
		{"malformed key", "Bearer clp_short", "invalid api key"},
		{"unknown key", "Bearer " + unknown, "invalid api key"},
		{"revoked key", "Bearer " + revoked.Key, "api key revoked"},
		{"expired key", "Bearer " + expired.Key, "api key expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.url+"/v1/me", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("GET /v1/me with %q = %d, WWW-Authenticate %q; want 401 with Bearer", tt.header, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			status, _, body := rawDo(t, "GET", e.url+"/v1/me", strings.TrimPrefix(tt.header, "Bearer "), nil)
			if tt.header != "" && strings.HasPrefix(tt.header, "Bearer ") && (status != 401 || body.Error.Message != tt.wantMsg) {
				t.Errorf("message = %q, want %q", body.Error.Message, tt.wantMsg)
			}
		})
	}
	// The access_token query parameter is for the WebSocket only.
	if status, _, _ := rawDo(t, "GET", e.url+"/v1/me?access_token="+a.member.key, "", nil); status != http.StatusUnauthorized {
		t.Errorf("GET /v1/me?access_token= = %d, want 401", status)
	}
}

func TestLastUsedAtIsThrottled(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	lastUsed := func() time.Time {
		var at *time.Time
		if err := e.db.QueryRow(ctx, `SELECT last_used_at FROM gateway.api_keys WHERE id = $1`, a.outsider.keyID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if at == nil {
			return time.Time{}
		}
		return *at
	}
	if !lastUsed().IsZero() {
		t.Fatal("unused key has last_used_at")
	}
	if _, err := a.outsider.c.Me(ctx); err != nil {
		t.Fatal(err)
	}
	first := lastUsed()
	if first.IsZero() {
		t.Fatal("last_used_at not set after use")
	}
	for range 3 {
		if _, err := a.outsider.c.Me(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := lastUsed(); !got.Equal(first) {
		t.Errorf("last_used_at moved from %v to %v within a minute", first, got)
	}
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.RateLimit = 0.5; c.RateBurst = 3 })
	ctx := context.Background()
	if _, err := gateway.CreateTenant(ctx, e.db, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	busy := e.newActor(t, "acme", "busy@acme.test", api.RoleMember)
	calm := e.newActor(t, "acme", "calm@acme.test", api.RoleMember)
	for i := range 3 {
		if _, err := busy.c.Me(ctx); err != nil {
			t.Fatalf("request %d within the burst: %v", i, err)
		}
	}
	status, h, body := rawDo(t, "GET", e.url+"/v1/me", busy.key, nil)
	retry, _ := strconv.Atoi(h.Get("Retry-After"))
	if status != http.StatusTooManyRequests || body.Error.Code != "rate_limited" || retry < 1 || retry > 2 {
		t.Errorf("over the burst = %d %+v Retry-After %q, want 429 rate_limited with 1-2 s", status, body.Error, h.Get("Retry-After"))
	}
	if _, err := calm.c.Me(ctx); err != nil {
		t.Errorf("another key is limited too: %v", err)
	}
}
