package mcpoauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"clopen.dev/pkg/platform/mcpoauth/authserver"
)

func TestDiscoverLocations(t *testing.T) {
	tests := []struct {
		name      string
		asPath    string
		oidcOnly  bool
		challenge func(*authserver.MCPServer) string
		moveDoc   bool // serve resource metadata only at the root well-known URL
	}{
		{name: "header names the metadata"},
		{name: "bare challenge, path-inserted well-known", challenge: func(*authserver.MCPServer) string { return "Bearer" }},
		{name: "no challenge, root well-known", challenge: func(*authserver.MCPServer) string { return "" }, moveDoc: true},
		{name: "issuer with a path", asPath: "/tenant1"},
		{name: "OpenID configuration only", oidcOnly: true},
		{name: "OpenID configuration of an issuer with a path", asPath: "/tenant1", oidcOnly: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := authserver.NewAuthServer(t, tt.asPath)
			as.OIDCOnly = tt.oidcOnly
			m := authserver.NewMCPServer(t, as, nil)
			m.Challenge = tt.challenge
			if tt.moveDoc {
				moveResourceDocToRoot(t, m)
			}
			resp := m.Call(t, "")
			srv, err := newClient(t, nil).Discover(context.Background(), m.URL(), resp.Header.Get("WWW-Authenticate"))
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			want := Server{
				Resource: m.URL(), Issuer: as.Issuer(),
				AuthorizationEndpoint: as.Srv.URL + "/authorize", TokenEndpoint: as.Srv.URL + "/token",
				RegistrationEndpoint: as.Srv.URL + "/register", Scopes: []string{"mcp:tools"},
			}
			if srv.String() != want.String() {
				t.Errorf("Discover = %v, want %v", srv, want)
			}
		})
	}
}

// moveResourceDocToRoot replaces m's server with one that serves the
// protected-resource metadata only at /.well-known/oauth-protected-resource.
func moveResourceDocToRoot(t *testing.T, m *authserver.MCPServer) {
	t.Helper()
	old := m.Srv.Config.Handler
	m.Srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			http.NotFound(w, r)
		case "/.well-known/oauth-protected-resource":
			r.URL.Path += "/mcp"
			old.ServeHTTP(w, r)
		default:
			old.ServeHTTP(w, r)
		}
	})
}

// Each hostile answer is refused with ErrMetadata; the same servers
// unedited pass (TestDiscoverLocations), so each refusal is the edit's.
func TestDiscoverRefusesHostileMetadata(t *testing.T) {
	tests := []struct {
		name     string
		meta     func(map[string]any)
		resource func(m *authserver.MCPServer, doc map[string]any)
		allow    func(string) bool
		want     string // in the error: the rule that refused
	}{
		{name: "issuer mismatch", want: `issuer`, meta: func(m map[string]any) { m["issuer"] = "https://evil.example" }},
		{name: "http token endpoint on a public host", want: `token_endpoint`, meta: func(m map[string]any) { m["token_endpoint"] = "http://auth.example.com/token" }},
		{name: "http authorization endpoint on a public host", want: `authorization_endpoint`, meta: func(m map[string]any) { m["authorization_endpoint"] = "http://auth.example.com/authorize" }},
		{name: "http registration endpoint on a public host", want: `registration_endpoint`, meta: func(m map[string]any) { m["registration_endpoint"] = "http://auth.example.com/register" }},
		{name: "endpoint with credentials", want: `credentials`, meta: func(m map[string]any) { m["token_endpoint"] = "https://u:p@auth.example.com/token" }},
		{name: "non-http endpoint", want: `not https`, meta: func(m map[string]any) { m["token_endpoint"] = "ftp://auth.example.com/token" }},
		{name: "plain PKCE only", want: `S256`, meta: func(m map[string]any) { m["code_challenge_methods_supported"] = []string{"plain"} }},
		{name: "PKCE not advertised", want: `S256`, meta: func(m map[string]any) { delete(m, "code_challenge_methods_supported") }},
		{name: "no code response type", want: `response type`, meta: func(m map[string]any) { m["response_types_supported"] = []string{"token"} }},
		{name: "resource of another origin", want: `does not cover`, resource: func(_ *authserver.MCPServer, d map[string]any) { d["resource"] = "https://other.example/mcp" }},
		{name: "resource of another path", want: `does not cover`, resource: func(m *authserver.MCPServer, d map[string]any) { d["resource"] = m.Srv.URL + "/other" }},
		{name: "resource as a bare prefix", want: `does not cover`, resource: func(m *authserver.MCPServer, d map[string]any) { d["resource"] = m.Srv.URL + "/mc" }},
		{name: "no authorization server", want: `no authorization server`, resource: func(_ *authserver.MCPServer, d map[string]any) { delete(d, "authorization_servers") }},
		{name: "authorization server over http on a public host", want: `authorization server "http`, resource: func(_ *authserver.MCPServer, d map[string]any) {
			d["authorization_servers"] = []string{"http://auth.example.com"}
		}},
		{name: "loopback http not allowed by the operator", want: `plain http`, allow: func(string) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := authserver.NewAuthServer(t, "")
			as.Meta = tt.meta
			m := authserver.NewMCPServer(t, as, nil)
			if tt.resource != nil {
				m.ResourceDoc = func(d map[string]any) { tt.resource(m, d) }
			}
			allow := loopbackOK
			if tt.allow != nil {
				allow = tt.allow
			}
			c := newClient(t, func(cfg *Config) { cfg.Endpoints.Allow = allow })
			resp := m.Call(t, "")
			srv, err := c.Discover(context.Background(), m.URL(), resp.Header.Get("WWW-Authenticate"))
			if !errors.Is(err, ErrMetadata) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Discover = %v, %v; want ErrMetadata saying %q", srv, err, tt.want)
			}
		})
	}
}

// A metadata URL that redirects to plain http on a public host is not
// followed.
func TestDiscoverRefusesRedirectToHTTP(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	m := authserver.NewMCPServer(t, as, nil)
	old := m.Srv.Config.Handler
	m.Srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			http.Redirect(w, r, "http://metadata.example.com/latest", http.StatusFound)
			return
		}
		old.ServeHTTP(w, r)
	})
	resp := m.Call(t, "")
	_, err := newClient(t, nil).Discover(context.Background(), m.URL(), resp.Header.Get("WWW-Authenticate"))
	if !errors.Is(err, ErrMetadata) {
		t.Fatalf("Discover through a redirect to http: err = %v, want ErrMetadata", err)
	}
}

func TestRegisterWithoutEndpoint(t *testing.T) {
	_, err := newClient(t, nil).Register(context.Background(), Server{Issuer: "https://as.example"})
	if !errors.Is(err, ErrNoRegistration) {
		t.Fatalf("Register without an endpoint: err = %v, want ErrNoRegistration", err)
	}
}

// Discovery dials only public addresses unless the operator allows the
// host: an https URL naming an internal server is not fetched. With a
// client that lacks the check the same URL reaches the server, so the
// refusal is the check's.
func TestDiscoverRefusesInternalAddresses(t *testing.T) {
	var hits atomic.Int32
	internal := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(internal.Close)
	ctx := context.Background()

	guarded := newClient(t, func(cfg *Config) { cfg.Endpoints.Allow = nil })
	for _, u := range []string{internal.URL + "/mcp", "https://169.254.169.254/mcp", "https://10.0.0.1/mcp", "https://[::1]:1/mcp"} {
		if _, err := guarded.Discover(ctx, u, ""); !errors.Is(err, ErrMetadata) || !strings.Contains(err.Error(), "not a host the operator allows") {
			t.Errorf("Discover(%s) = %v, want ErrMetadata refusing the address", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the internal server was reached %d times", n)
	}

	unguarded := newClient(t, func(cfg *Config) { cfg.Endpoints.Allow = nil; cfg.HTTPClient = internal.Client() })
	_, _ = unguarded.Discover(ctx, internal.URL+"/mcp", "")
	if hits.Load() == 0 {
		t.Fatalf("without the dial check the internal server was not reached; the test proves nothing")
	}
}

func TestRegisterRefusesAnswers(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{name: "no client id", status: http.StatusCreated, body: `{"client_secret":"x"}`, want: ErrMetadata},
		{name: "not JSON", status: http.StatusCreated, body: `<html>`, want: ErrMetadata},
		{name: "refused", status: http.StatusBadRequest, body: `{"error":"invalid_redirect_uri"}`, want: ErrMetadata},
		{name: "server failing", status: http.StatusServiceUnavailable, body: ``, want: ErrUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(reg.Close)
			srv, err := newClient(t, nil).Register(context.Background(), Server{RegistrationEndpoint: reg.URL})
			if !errors.Is(err, tt.want) || srv.ClientID != "" {
				t.Fatalf("Register = %v, %v; want no client and %v", srv, err, tt.want)
			}
		})
	}
}
