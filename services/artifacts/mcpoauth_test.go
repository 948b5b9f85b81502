package artifacts

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/egress"
	"clopen.dev/pkg/platform/mcpoauth/authserver"
)

// TestMCPOAuthGrant: a sign-in over the bus seals a grant that resolves as
// the server's Authorization header; racing resolves of a token due for
// refresh spend each rotating refresh token once (the row's lock), a
// replace keeps the grant while the URL stays, and a new URL drops it.
func TestMCPOAuthGrant(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	as.TTL = time.Minute // under the refresh margin: every resolve refreshes
	m := authserver.NewMCPServer(t, as, nil)
	e := startWith(t, func(c *Config) {
		c.PublicURL = "https://clopen.example"
		c.Egress = egress.Policy{Allow: []string{"127.0.0.1"}}
	})
	c := newCaller()
	srv := events.MCPServerDef{Slug: "guarded", Transport: events.MCPHTTP, URL: m.URL()}
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: c, Server: srv, Headers: map[string]string{"X-Team": "a"}}, nil)

	var started events.MCPOAuthStarted
	e.must(events.OpMCPOAuthStart, events.MCPOAuthStart{MCPServerRef: events.MCPServerRef{Caller: c, Slug: "guarded"}}, &started)
	back := authserver.Consent(t, started.AuthorizationURL)
	if back.Host != "clopen.example" || back.Path != OAuthCallbackPath {
		t.Fatalf("authorization redirected to %s, want the callback under the public URL", back)
	}
	var d events.MCPServerDef
	e.must(events.OpMCPOAuthComplete, events.MCPOAuthComplete{Caller: events.Caller{TenantID: c.TenantID}, Query: back.Query()}, &d)
	if d.Slug != "guarded" {
		t.Errorf("complete = %+v, want the guarded server", d)
	}
	var audit string
	if err := e.db.QueryRow(context.Background(), `SELECT coalesce(string_agg(action || ' ' || coalesce(after::text, ''), ' '), '')
		FROM artifacts.audit_log WHERE tenant_id = $1 AND action = 'mcp_server.authorize'`, c.TenantID).Scan(&audit); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(audit, "guarded") || strings.Contains(audit, "at-") || strings.Contains(audit, "rt-") {
		t.Errorf("audit of the sign-in = %q, want it named, without the tokens", audit)
	}

	resolve := func() (events.ResolvedMCPServer, error) {
		var r events.ResolvedMCPServer
		err := e.call(events.OpMCPServersResolve, events.MCPServerRef{Caller: c, Slug: "guarded"}, &r)
		return r, err
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			r, err := resolve()
			tok, ok := strings.CutPrefix(r.Headers["Authorization"], "Bearer ")
			if err != nil || !ok || !as.Valid(tok, m.URL()) || r.NeedsAuth != "" || r.Headers["X-Team"] != "a" {
				t.Errorf("racing resolve = %+v, %v; want a live bearer beside the sealed header", r.NeedsAuth, err)
			}
			// The bridge renews a run's link before the token expires.
			if until := time.Until(r.Expires); until <= 0 || until > as.TTL {
				t.Errorf("the resolved token expires in %v, want within the server's TTL %v", until, as.TTL)
			}
		})
	}
	wg.Wait()
	if got := as.Refreshes(); got != 4 {
		t.Errorf("%d refreshes for 4 resolves, want 4, each with the token the last one sealed", got)
	}

	srv.Name = "Guarded"
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: c, Server: srv}, nil)
	if r, err := resolve(); err != nil || r.Headers["Authorization"] == "" {
		t.Errorf("after a replace at the same URL = %v, %v; want the grant kept", r.Headers, err)
	}
	srv.URL = strings.Replace(m.URL(), "/mcp", "/other", 1)
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: c, Server: srv}, nil)
	if r, err := resolve(); err != nil || r.Headers["Authorization"] != "" {
		t.Errorf("after a move to another URL = %v, %v; want the grant dropped", r.Headers, err)
	}
}
