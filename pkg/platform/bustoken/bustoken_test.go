package bustoken

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func testKeys(t *testing.T) (Keys, *Signer, *Signer, *Verifier) {
	t.Helper()
	k := Generate()
	cs, err := k.CallerSigner()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := k.DispatchSigner()
	if err != nil {
		t.Fatal(err)
	}
	return k, cs, ds, k.Verifier()
}

func TestSignVerify(t *testing.T) {
	_, cs, ds, v := testKeys(t)
	tok, err := cs.Sign(Claims{TenantID: "t1", UserID: "u1", Role: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(tok, Caller)
	if err != nil {
		t.Fatalf("Verify(caller token) = %v", err)
	}
	if c.Kind != Caller || c.TenantID != "t1" || c.UserID != "u1" || c.Role != "admin" {
		t.Errorf("claims = %+v", c)
	}
	if got := time.Duration(c.ExpiresAt-c.IssuedAt) * time.Second; got != CallerTTL {
		t.Errorf("lifetime = %v, want %v", got, CallerTTL)
	}
	dt, err := ds.Sign(Claims{Kind: Caller, TenantID: "t1", RunID: "r1", Engine: "claude", AccountID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := v.Verify(dt, Dispatch)
	if err != nil {
		t.Fatalf("Verify(dispatch token) = %v", err)
	}
	if d.Kind != Dispatch || d.RunID != "r1" || d.AccountID != "a1" {
		t.Errorf("claims = %+v (the signer's kind wins over the claims')", d)
	}
}

func TestVerifyRefuses(t *testing.T) {
	_, cs, ds, v := testKeys(t)
	good, _ := cs.Sign(Claims{TenantID: "t1"})
	dispatch, _ := ds.Sign(Claims{TenantID: "t1", RunID: "r1"})
	other, _ := Generate().CallerSigner()
	forged, _ := other.Sign(Claims{TenantID: "t1"})

	// A caller token re-labelled as a dispatch token, signature kept.
	payload, sig, _ := strings.Cut(good, ".")
	body, _ := base64.RawURLEncoding.DecodeString(payload)
	relabelled := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(body), `"caller"`, `"dispatch"`, 1))) + "." + sig
	retenanted := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(body), `"t1"`, `"t2"`, 1))) + "." + sig

	past := *cs
	past.now = func() time.Time { return time.Now().Add(-CallerTTL - Skew - time.Second) }
	expired, _ := past.Sign(Claims{TenantID: "t1"})
	justExpired := *cs
	justExpired.now = func() time.Time { return time.Now().Add(-CallerTTL - Skew/2) }
	withinSkew, _ := justExpired.Sign(Claims{TenantID: "t1"})
	future := *cs
	future.now = func() time.Time { return time.Now().Add(Skew + time.Minute) }
	early, _ := future.Sign(Claims{TenantID: "t1"})

	tests := []struct {
		name   string
		give   string
		accept []Kind
		want   string
	}{
		{"empty", "", []Kind{Caller}, "no token"},
		{"no dot", "abc", []Kind{Caller}, "want claims.signature"},
		{"two dots", good + ".x", []Kind{Caller}, "want claims.signature"},
		{"bad base64", "!!." + sig, []Kind{Caller}, "not base64url"},
		{"short signature", payload + ".AAAA", []Kind{Caller}, "signature"},
		{"not json", base64.RawURLEncoding.EncodeToString([]byte("nope")) + "." + sig, []Kind{Caller}, "not a JSON object"},
		{"wrong kind", dispatch, []Kind{Caller}, `a "dispatch" token where "caller" is wanted`},
		{"accepts none", good, nil, "no token"},
		{"other key", forged, []Kind{Caller}, "bad signature"},
		{"relabelled", relabelled, []Kind{Dispatch}, "bad signature"},
		{"retenanted", retenanted, []Kind{Caller}, "bad signature"},
		{"expired", expired, []Kind{Caller}, "expired"},
		{"future", early, []Kind{Caller}, "issued in the future"},
		{"too long", strings.Repeat("a", maxLen+1), []Kind{Caller}, "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(tt.give, tt.accept...)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Verify = %v, want ErrInvalid saying %q", err, tt.want)
			}
		})
	}
	if _, err := v.Verify(withinSkew, Caller); err != nil {
		t.Errorf("Verify(expired within the skew) = %v, want accepted", err)
	}
	callerOnly := Keys{CallerPubKey: Generate().CallerPubKey}.Verifier()
	if _, err := callerOnly.Verify(dispatch, Dispatch); err == nil || !strings.Contains(err.Error(), "no key to verify dispatch") {
		t.Errorf("Verify without the dispatch key = %v", err)
	}
}

// TestMCPKind: an mcp token carries its run's servers and lives minutes;
// the mcp key makes no other kind, and another kind's key makes no mcp
// token a verifier accepts.
func TestMCPKind(t *testing.T) {
	k := Generate()
	ms, err := k.MCPSigner()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ms.Sign(Claims{TenantID: "t1", ProjectID: "p1", SessionID: "s1", RunID: "r1", Engine: "pi", Servers: []string{"docs"}})
	if err != nil {
		t.Fatal(err)
	}
	v := k.Verifier()
	c, err := v.Verify(tok, MCP)
	if err != nil {
		t.Fatalf("Verify(mcp token) = %v", err)
	}
	if c.Kind != MCP || c.RunID != "r1" || c.ProjectID != "p1" || len(c.Servers) != 1 || c.Servers[0] != "docs" {
		t.Errorf("claims = %+v", c)
	}
	if got := time.Duration(c.ExpiresAt-c.IssuedAt) * time.Second; got != MCPTTL {
		t.Errorf("lifetime = %v, want %v", got, MCPTTL)
	}
	if _, err := v.Verify(tok, Dispatch, Caller); err == nil {
		t.Error("an mcp token passed as a dispatch or caller token")
	}
	ds, _ := k.DispatchSigner()
	dt, _ := ds.Sign(Claims{TenantID: "t1", RunID: "r1"})
	if _, err := v.Verify(dt, MCP); err == nil {
		t.Error("a dispatch token passed as an mcp token")
	}
	// The dispatch key signing a token labelled mcp: refused by signature.
	wrongKey, _ := NewSigner(MCP, k.DispatchKey, MCPTTL)
	forged, _ := wrongKey.Sign(Claims{TenantID: "t1", RunID: "r1"})
	if _, err := v.Verify(forged, MCP); err == nil || !strings.Contains(err.Error(), "bad signature") {
		t.Errorf("Verify(mcp token signed with the dispatch key) = %v, want bad signature", err)
	}
}

func TestSignerRefuses(t *testing.T) {
	k := Generate()
	if _, err := NewSigner("root", k.CallerKey, time.Minute); err == nil {
		t.Error("NewSigner(unknown kind) succeeded")
	}
	if _, err := NewSigner(Caller, k.CallerKey[:10], time.Minute); err == nil {
		t.Error("NewSigner(short key) succeeded")
	}
	s, _ := k.CallerSigner()
	if _, err := s.Sign(Claims{UserID: "u"}); err == nil {
		t.Error("Sign without a tenant succeeded")
	}
}

func TestKeysEnv(t *testing.T) {
	k := Generate()
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(k.Env()), "\n") {
		name, v, _ := strings.Cut(line, "=")
		env[name] = v
	}
	if len(env) != 6 {
		t.Fatalf("Env has %d variables, want 6:\n%s", len(env), k.Env())
	}
	got, err := FromEnv(func(n string) string { return env[n] })
	if err != nil {
		t.Fatal(err)
	}
	if !got.CallerKey.Equal(k.CallerKey) || !got.CallerPubKey.Equal(k.CallerPubKey) ||
		!got.DispatchKey.Equal(k.DispatchKey) || !got.DispatchPubKey.Equal(k.DispatchPubKey) ||
		!got.MCPKey.Equal(k.MCPKey) || !got.MCPPubKey.Equal(k.MCPPubKey) {
		t.Error("FromEnv(Env()) differs from the keys")
	}
	gw := k.Only(Need{CallerKey: true})
	if gw.CallerPubKey != nil || gw.DispatchKey != nil || gw.DispatchPubKey != nil || gw.MCPKey != nil || gw.MCPPubKey != nil {
		t.Errorf("Only(caller key) kept more: %+v", gw)
	}
	err = gw.Check(Need{CallerKey: true, DispatchPubKey: true})
	if err == nil || !strings.Contains(err.Error(), EnvDispatchPubKey) || strings.Contains(err.Error(), EnvCallerKey+",") ||
		!strings.Contains(err.Error(), "clopen admin bus-keys") {
		t.Errorf("Check = %v, want it to name %s and the command", err, EnvDispatchPubKey)
	}
	for _, bad := range []string{"zz", base64.StdEncoding.EncodeToString(make([]byte, 31))} {
		_, err := FromEnv(func(n string) string {
			if n == EnvCallerPubKey {
				return bad
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), EnvCallerPubKey) {
			t.Errorf("FromEnv(%q) = %v, want an error naming %s", bad, err, EnvCallerPubKey)
		}
	}
}

// FuzzVerify: no input makes Verify panic, and whatever it accepts was
// signed by the key (the only signed inputs are those the corpus holds).
func FuzzVerify(f *testing.F) {
	k := Generate()
	cs, _ := k.CallerSigner()
	good, _ := cs.Sign(Claims{TenantID: "t1", UserID: "u1"})
	f.Add(good)
	f.Add("")
	f.Add(".")
	f.Add("e30.AAAA")
	f.Add(strings.Repeat(".", 100))
	v := k.Verifier()
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := v.Verify(tok, Caller, Dispatch)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Verify(%q) = %v, not ErrInvalid", tok, err)
			}
			return
		}
		payload, sig, _ := strings.Cut(tok, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(sig)
		if !ed25519.Verify(k.CallerPubKey, []byte(payload), raw) || c.TenantID == "" {
			t.Fatalf("Verify accepted %q, which the key did not sign", tok)
		}
	})
}

// TestSignRefusesWhatVerifyWould: an mcp token naming as many external
// servers as a run may get (events.MaxRunMCPServers, 32, slugs of 64
// characters) is signed and verifies; one whose claims would not fit is
// refused by the signer, not left for the verifier to refuse.
func TestSignRefusesWhatVerifyWould(t *testing.T) {
	keys := Generate()
	signer, _ := keys.MCPSigner()
	claims := func(n int) Claims {
		c := Claims{TenantID: "2f8b6f0e-8c1e-4f57-9a55-6a0d1c9e2b11", ProjectID: "2f8b6f0e-8c1e-4f57-9a55-6a0d1c9e2b12",
			SessionID: "2f8b6f0e-8c1e-4f57-9a55-6a0d1c9e2b13", RunID: "2f8b6f0e-8c1e-4f57-9a55-6a0d1c9e2b14", Engine: "claude-code"}
		for i := range n {
			c.Servers = append(c.Servers, fmt.Sprintf("%02d-%s", i, strings.Repeat("s", 61)))
		}
		return c
	}
	tok, err := signer.Sign(claims(32))
	if err != nil {
		t.Fatalf("Sign of 32 servers: %v", err)
	}
	if c, err := keys.Verifier().Verify(tok, MCP); err != nil || len(c.Servers) != 32 {
		t.Fatalf("Verify of 32 servers = %d servers, %v", len(c.Servers), err)
	}
	if _, err := signer.Sign(claims(60)); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("Sign of 60 servers = %v, want refused as too long", err)
	}
}
