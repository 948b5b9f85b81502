package mcpoauth

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseChallenge(t *testing.T) {
	tests := []struct {
		give   string
		want   Challenge
		wantOK bool
	}{
		{give: `Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource", scope="a b"`,
			want: Challenge{ResourceMetadata: "https://mcp.example/.well-known/oauth-protected-resource", Scope: "a b"}, wantOK: true},
		{give: `Basic realm="x", Bearer error="invalid_token", resource_metadata=https://m.example/rm`,
			want: Challenge{ResourceMetadata: "https://m.example/rm", Error: "invalid_token"}, wantOK: true},
		{give: `Bearer realm="a \"quoted\" realm", scope="s"`, want: Challenge{Scope: "s"}, wantOK: true},
		{give: `Negotiate abc==, bearer scope=x`, want: Challenge{Scope: "x"}, wantOK: true},
		{give: `Basic realm="x", DPoP resource_metadata="https://evil.example/"`, wantOK: false},
		{give: `Bearer`, wantOK: true},
		{give: ``, wantOK: false},
	}
	for _, tt := range tests {
		got, ok, err := ParseChallenge(tt.give)
		if err != nil || ok != tt.wantOK || got != tt.want {
			t.Errorf("ParseChallenge(%q) = %+v, %v, %v; want %+v, %v", tt.give, got, ok, err, tt.want, tt.wantOK)
		}
	}
	if _, _, err := ParseChallenge(`Bearer scope="open`); err == nil {
		t.Errorf("ParseChallenge of an unterminated quote succeeded, want an error")
	}
}

func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://m.example/rm", scope="a b"`,
		`Basic realm="x", Bearer error="invalid_token"`,
		`Negotiate abc==, bearer scope=x`, `Bearer "`, `=,=`, `Bearer a=\`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		c, ok, err := ParseChallenge(header)
		if err != nil && (ok || c != Challenge{}) {
			t.Fatalf("ParseChallenge(%q) = %+v, %v with error %v; want nothing with an error", header, c, ok, err)
		}
		if !ok && c != (Challenge{}) {
			t.Fatalf("ParseChallenge(%q) = %+v without a Bearer challenge", header, c)
		}
		// A value the parser read comes back from its quoted form.
		if c.Scope != "" {
			q := `Bearer scope="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(c.Scope) + `"`
			if back, _, err := ParseChallenge(q); err != nil || back.Scope != c.Scope {
				t.Fatalf("scope %q re-quoted parsed as %q, %v", c.Scope, back.Scope, err)
			}
		}
	})
}

// accepted checks what any document the parsers accept must satisfy.
func accepted(t *testing.T, field, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		t.Fatalf("accepted %s %q", field, raw)
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !isLoopback(u.Hostname())) {
		t.Fatalf("accepted %s %q: neither https nor loopback http", field, raw)
	}
}

func FuzzParseServerMetadata(f *testing.F) {
	f.Add([]byte(`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t","code_challenge_methods_supported":["S256"]}`))
	f.Add([]byte(`{"issuer":"https://as.example","authorization_endpoint":"http://127.0.0.1/a","token_endpoint":"http://10.0.0.1/t","code_challenge_methods_supported":["plain"]}`))
	f.Add([]byte(`{"issuer":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseServerMetadata(data, "https://as.example", Endpoints{Allow: loopbackOK})
		if err != nil {
			return
		}
		accepted(t, "authorization_endpoint", m.AuthorizationEndpoint)
		accepted(t, "token_endpoint", m.TokenEndpoint)
		if m.RegistrationEndpoint != "" {
			accepted(t, "registration_endpoint", m.RegistrationEndpoint)
		}
		if !slices.Contains(m.CodeChallengeMethodsSupported, "S256") || strings.TrimSuffix(m.Issuer, "/") != "https://as.example" {
			t.Fatalf("accepted %+v: no S256 or another issuer", m)
		}
	})
}

func FuzzParseResourceMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"]}`))
	f.Add([]byte(`{"resource":"https://mcp.example","authorization_servers":["http://as.example"]}`))
	f.Add([]byte(`{"resource":"https://other.example/mcp","authorization_servers":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseResourceMetadata(data, "https://mcp.example/mcp", Endpoints{Allow: loopbackOK})
		if err != nil {
			return
		}
		accepted(t, "resource", m.Resource)
		res, _ := url.Parse(m.Resource)
		if !strings.EqualFold(res.Host, "mcp.example") {
			t.Fatalf("accepted resource %q for https://mcp.example/mcp", m.Resource)
		}
		if len(m.AuthorizationServers) == 0 {
			t.Fatalf("accepted %+v without an authorization server", m)
		}
		for _, as := range m.AuthorizationServers {
			accepted(t, "authorization server", as)
		}
	})
}

// FuzzVerifyState: no string but one signed with the key verifies, and
// what verifies is bound to the tenant asked.
func FuzzVerifyState(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	valid := signState(key, stateClaims{Tenant: "t", Slug: "s", Nonce: "n", Expires: now.Unix() + 60})
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add("e30.")
	f.Fuzz(func(t *testing.T, state string) {
		c, err := verifyState(key, state, "t", now)
		if err != nil {
			return
		}
		if c.Tenant != "t" || c.Expires <= now.Unix() {
			t.Fatalf("verified %+v for tenant t at %d", c, now.Unix())
		}
		if state != valid && signState(key, c) != state {
			t.Fatalf("verified a state %q that was never signed", state)
		}
	})
}

// FuzzStateTenant: the callback's routing read of a state never panics,
// names a tenant whenever it succeeds, and agrees with verifyState on every
// state that verifies.
func FuzzStateTenant(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	f.Add(signState(key, stateClaims{Tenant: "t", Slug: "s", Nonce: "n", Expires: now.Unix() + 60}))
	f.Add("e30.")
	f.Add("eyJ0IjoiIn0.x")
	f.Fuzz(func(t *testing.T, state string) {
		tenant, err := StateTenant(state)
		if err != nil {
			return
		}
		if tenant == "" {
			t.Fatalf("StateTenant(%q) named no tenant and no error", state)
		}
		if c, err := verifyState(key, state, tenant, now); err == nil && c.Tenant != tenant {
			t.Fatalf("StateTenant = %q, verifyState = %q", tenant, c.Tenant)
		}
	})
}
