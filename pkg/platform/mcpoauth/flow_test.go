package mcpoauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"clopen.dev/pkg/platform/mcpoauth/authserver"
)

const testRedirect = "https://clopen.example/v1/mcp-oauth/callback"

func loopbackOK(string) bool { return true }

func newClient(t *testing.T, edit func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		RedirectURL: testRedirect,
		StateKey:    []byte("0123456789abcdef0123456789abcdef"),
		Pending:     &MemPending{},
		Endpoints:   Endpoints{Allow: loopbackOK},
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// consent plays the user and returns the callback's query, checking the
// callback is the configured one.
func consent(t *testing.T, authURL string) url.Values {
	t.Helper()
	loc := authserver.Consent(t, authURL)
	if !strings.HasPrefix(loc.String(), testRedirect+"?") {
		t.Fatalf("redirected to %q, want the callback %s", loc, testRedirect)
	}
	return loc.Query()
}

// connect runs discovery, registration and Start for tenant against m, and
// returns the authorization URL.
func connect(t *testing.T, c *Client, m *authserver.MCPServer, tenant string) string {
	t.Helper()
	ctx := context.Background()
	resp := m.Call(t, "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated call answered %d, want 401", resp.StatusCode)
	}
	srv, err := c.Discover(ctx, m.URL(), resp.Header.Get("WWW-Authenticate"))
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if srv, err = c.Register(ctx, srv); err != nil {
		t.Fatalf("Register: %v", err)
	}
	authURL, err := c.Start(ctx, tenant, "docs", srv)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return authURL
}

func TestFullFlow(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	m := authserver.NewMCPServer(t, as, nil)
	c := newClient(t, nil)
	ctx := context.Background()

	authURL := connect(t, c, m, "tenant-a")
	q, _ := url.Parse(authURL)
	for k, want := range map[string]string{
		"code_challenge_method": "S256",
		"resource":              m.URL(),
		"scope":                 "mcp:tools",
		"redirect_uri":          testRedirect,
	} {
		if got := q.Query().Get(k); got != want {
			t.Errorf("authorization url %s = %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(authURL, as.Srv.URL+"/authorize?") {
		t.Errorf("authorization url %s is not the server's authorization endpoint", authURL)
	}

	cb := consent(t, authURL)
	g, err := c.Complete(ctx, "tenant-a", cb)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if g.Tenant != "tenant-a" || g.Slug != "docs" || g.Server.ClientID == "" {
		t.Errorf("grant = %+v, want tenant-a/docs with a client", g)
	}
	if resp := m.Call(t, g.Token.Header()); resp.StatusCode != http.StatusOK {
		t.Errorf("authenticated call answered %d, want 200", resp.StatusCode)
	}
	if _, err := c.Complete(ctx, "tenant-a", cb); !errors.Is(err, ErrState) {
		t.Errorf("replayed callback: err = %v, want ErrState", err)
	}
}

// The authorization server checks the PKCE verifier: a callback whose
// pending record holds another verifier gets its code refused.
func TestWrongVerifierRefused(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	m := authserver.NewMCPServer(t, as, nil)
	store := &swapVerifier{}
	c := newClient(t, func(cfg *Config) { cfg.Pending = store })

	_, err := c.Complete(context.Background(), "tenant-a", consent(t, connect(t, c, m, "tenant-a")))
	if !errors.Is(err, ErrNeedsAuth) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("Complete with a wrong verifier: err = %v, want ErrNeedsAuth (invalid_grant)", err)
	}
}

// swapVerifier hands back every pending record with a fresh verifier.
type swapVerifier struct{ MemPending }

func (s *swapVerifier) Take(ctx context.Context, nonce string) (Pending, error) {
	p, err := s.MemPending.Take(ctx, nonce)
	p.Verifier = Secret(oauth2.GenerateVerifier())
	return p, err
}

// grant completes a flow for tenant-a and returns the grant.
func grant(t *testing.T, c *Client, m *authserver.MCPServer) Grant {
	t.Helper()
	g, err := c.Complete(context.Background(), "tenant-a", consent(t, connect(t, c, m, "tenant-a")))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return g
}

func TestFreshToken(t *testing.T) {
	ctx := context.Background()
	as := authserver.NewAuthServer(t, "")
	m := authserver.NewMCPServer(t, as, nil)
	c := newClient(t, nil)

	g := grant(t, c, m)
	tok, changed, err := c.FreshToken(ctx, g.Server, g.Token)
	if err != nil || changed || tok.AccessToken != g.Token.AccessToken || as.Refreshes() != 0 {
		t.Fatalf("FreshToken of a token valid for an hour = %v, %v, %v after %d refreshes; want it unchanged and no refresh", tok, changed, err, as.Refreshes())
	}

	as.TTL = time.Minute // inside the 2-minute margin
	g = grant(t, c, m)
	tok, changed, err = c.FreshToken(ctx, g.Server, g.Token)
	if err != nil || !changed || tok.AccessToken == g.Token.AccessToken || as.Refreshes() != 1 {
		t.Fatalf("FreshToken of a token expiring in a minute = %v, %v, %v after %d refreshes; want a new token", tok, changed, err, as.Refreshes())
	}
	if tok.RefreshToken == g.Token.RefreshToken || tok.RefreshToken == "" {
		t.Errorf("refresh token not rotated: %v", tok)
	}
	if resp := m.Call(t, tok.Header()); resp.StatusCode != http.StatusOK {
		t.Errorf("call with the refreshed token answered %d, want 200", resp.StatusCode)
	}

	// The old refresh token was rotated away: using it again is invalid_grant.
	if _, _, err := c.FreshToken(ctx, g.Server, g.Token); !errors.Is(err, ErrNeedsAuth) {
		t.Errorf("FreshToken with a used refresh token: err = %v, want ErrNeedsAuth", err)
	}
	as.FailTokens(http.StatusBadGateway)
	if _, _, err := c.FreshToken(ctx, g.Server, tok); !errors.Is(err, ErrUnreachable) {
		t.Errorf("FreshToken with the token endpoint failing: err = %v, want ErrUnreachable", err)
	}
	as.FailTokens(0)
	as.RevokeRefresh()
	if _, _, err := c.FreshToken(ctx, g.Server, tok); !errors.Is(err, ErrNeedsAuth) {
		t.Errorf("FreshToken after revocation: err = %v, want ErrNeedsAuth", err)
	}
	noRefresh := tok
	noRefresh.RefreshToken = ""
	if _, _, err := c.FreshToken(ctx, g.Server, noRefresh); !errors.Is(err, ErrNeedsAuth) {
		t.Errorf("FreshToken without a refresh token: err = %v, want ErrNeedsAuth", err)
	}

	as.Srv.Close()
	if _, _, err := c.FreshToken(ctx, g.Server, tok); !errors.Is(err, ErrUnreachable) {
		t.Errorf("FreshToken with the server down: err = %v, want ErrUnreachable", err)
	}
}

// A server without dynamic registration is used with a client the operator
// configured, confidential here: the code is redeemed with its secret.
func TestConfiguredClient(t *testing.T) {
	ctx := context.Background()
	as := authserver.NewAuthServer(t, "")
	as.Meta = func(m map[string]any) { delete(m, "registration_endpoint") }
	as.AddClient("configured", "s3cret", testRedirect)
	m := authserver.NewMCPServer(t, as, nil)
	c := newClient(t, nil)

	srv, err := c.Discover(ctx, m.URL(), m.Call(t, "").Header.Get("WWW-Authenticate"))
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if _, err := c.Register(ctx, srv); !errors.Is(err, ErrNoRegistration) {
		t.Fatalf("Register: err = %v, want ErrNoRegistration", err)
	}
	srv.ClientID, srv.ClientSecret = "configured", "wrong"
	start := func() url.Values {
		authURL, err := c.Start(ctx, "tenant-a", "docs", srv)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		return consent(t, authURL)
	}
	if _, err := c.Complete(ctx, "tenant-a", start()); !errors.Is(err, ErrNeedsAuth) {
		t.Fatalf("Complete with a wrong client secret: err = %v, want ErrNeedsAuth", err)
	}
	srv.ClientSecret = "s3cret"
	g, err := c.Complete(ctx, "tenant-a", start())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp := m.Call(t, g.Token.Header()); resp.StatusCode != http.StatusOK {
		t.Errorf("authenticated call answered %d, want 200", resp.StatusCode)
	}
}

// A server that publishes no protected-resource metadata is authorized by
// the server at its own origin.
func TestDiscoverWithoutResourceMetadata(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	m := authserver.OnAuthServer(as)
	m.Challenge = func(*authserver.MCPServer) string { return "Bearer" }
	c := newClient(t, nil)
	g, err := c.Complete(context.Background(), "tenant-a", consent(t, connect(t, c, m, "tenant-a")))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if g.Server.Issuer != as.Srv.URL {
		t.Errorf("issuer = %q, want the server's origin %q", g.Server.Issuer, as.Srv.URL)
	}
	if resp := m.Call(t, g.Token.Header()); resp.StatusCode != http.StatusOK {
		t.Errorf("authenticated call answered %d, want 200", resp.StatusCode)
	}
}

// Of two callbacks racing with one state, exactly one redeems the code.
func TestCompleteOnce(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	m := authserver.NewMCPServer(t, as, nil)
	c := newClient(t, nil)
	cb := consent(t, connect(t, c, m, "tenant-a"))
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Complete(context.Background(), "tenant-a", cb)
			errs <- err
		}()
	}
	first, second := <-errs, <-errs
	if (first == nil) == (second == nil) || !errors.Is(errors.Join(first, second), ErrState) {
		t.Fatalf("two racing callbacks: %v and %v; want one success and one ErrState", first, second)
	}
}

// Challenge finds the server's Bearer challenge, and StateTenant reads the
// tenant a started authorization's state names.
func TestChallengeAndStateTenant(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	m := authserver.NewMCPServer(t, as, nil)
	c := newClient(t, nil)
	ch, err := c.Challenge(context.Background(), m.URL())
	if err != nil || !strings.Contains(ch, "resource_metadata=") {
		t.Fatalf("Challenge = %q, %v; want the resource_metadata challenge", ch, err)
	}
	u, _ := url.Parse(connect(t, c, m, "tenant-a"))
	if got, err := StateTenant(u.Query().Get("state")); got != "tenant-a" || err != nil {
		t.Errorf("StateTenant = %q, %v; want tenant-a", got, err)
	}
	for _, bad := range []string{"", "no-dot", "!!.x", "e30.sig"} {
		if _, err := StateTenant(bad); !errors.Is(err, ErrState) {
			t.Errorf("StateTenant(%q): err = %v, want ErrState", bad, err)
		}
	}
}
