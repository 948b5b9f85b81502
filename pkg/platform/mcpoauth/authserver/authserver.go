// Package authserver is an OAuth 2.1 authorization server and a protected
// MCP endpoint written for tests of mcpoauth and of what uses it: dynamic
// registration of public clients, authorization codes bound to a PKCE S256
// challenge, a redirect URI and a resource, single-use codes and rotating
// refresh tokens. Consent is given by whoever GETs /authorize, so a test's
// HTTP client plays the user. Nothing in it is fit for production.
package authserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// AuthServer is an OAuth 2.1 authorization server written for these tests:
// dynamic registration of public clients, authorization codes bound to a
// PKCE S256 challenge, a redirect URI and a resource, single-use codes and
// rotating refresh tokens. Consent is given by whoever GETs /authorize.
type AuthServer struct {
	Srv *httptest.Server
	Mux *http.ServeMux
	// path is the issuer's path ("" or "/tenant1").
	path string
	// Meta edits the metadata document before it is served.
	Meta func(m map[string]any)
	// OIDCOnly serves metadata only at the OpenID location.
	OIDCOnly bool
	// TTL is the lifetime of access tokens.
	TTL time.Duration

	mu        sync.Mutex
	clients   map[string]string // client id → redirect URI
	secrets   map[string]string // client id → secret, for confidential clients
	codes     map[string]codeGrant
	access    map[string]accessGrant
	refresh   map[string]string // refresh token → resource
	refreshes int
	failWith  int // a status the token endpoint answers instead, when set
}

type codeGrant struct {
	clientID, redirect, challenge, resource string
}

type accessGrant struct {
	resource string
	expires  time.Time
}

// NewAuthServer starts an authorization server whose issuer has path ("" or
// "/tenant1"); it stops with the test.
func NewAuthServer(t *testing.T, path string) *AuthServer {
	t.Helper()
	a := &AuthServer{
		path: path, TTL: time.Hour,
		clients: map[string]string{}, secrets: map[string]string{}, codes: map[string]codeGrant{},
		access: map[string]accessGrant{}, refresh: map[string]string{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/{doc...}", a.metadata)
	if path != "" {
		mux.HandleFunc("GET "+path+"/.well-known/{doc...}", a.metadata)
	}
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	a.Mux = mux
	a.Srv = httptest.NewServer(mux)
	t.Cleanup(a.Srv.Close)
	return a
}

// AddClient registers a confidential client out of band, as an operator
// does with a server that offers no dynamic registration.
func (a *AuthServer) AddClient(id, secret, redirect string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clients[id], a.secrets[id] = redirect, secret
}

// Issuer is the issuer identifier its metadata names.
func (a *AuthServer) Issuer() string { return a.Srv.URL + a.path }

func (a *AuthServer) metadata(w http.ResponseWriter, r *http.Request) {
	u := a.Srv.URL
	wantAS := "/.well-known/oauth-authorization-server" + a.path
	wantOIDC := []string{"/.well-known/openid-configuration" + a.path, a.path + "/.well-known/openid-configuration"}
	switch {
	case r.URL.Path == wantAS && !a.OIDCOnly:
	case r.URL.Path == wantOIDC[0], r.URL.Path == wantOIDC[1]:
	default:
		http.NotFound(w, r)
		return
	}
	m := map[string]any{
		"issuer":                                a.Issuer(),
		"authorization_endpoint":                u + "/authorize",
		"token_endpoint":                        u + "/token",
		"registration_endpoint":                 u + "/register",
		"response_types_supported":              []string{"code"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                      []string{"mcp:tools"},
	}
	if a.Meta != nil {
		a.Meta(m)
	}
	WriteJSON(w, http.StatusOK, m)
}

func (a *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) != 1 || req.AuthMethod != "none" {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := "client-" + rand.Text()
	a.mu.Lock()
	a.clients[id] = req.RedirectURIs[0]
	a.mu.Unlock()
	WriteJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "none"})
}

// authorize consents at once and redirects with a code, as a user clicking
// "allow" would; a request it cannot trust gets a 400 and no redirect.
func (a *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	defer a.mu.Unlock()
	redirect, ok := a.clients[q.Get("client_id")]
	if !ok || q.Get("redirect_uri") != redirect || q.Get("response_type") != "code" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	a.codes[code] = codeGrant{clientID: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource")}
	back := url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {a.Issuer()}}
	http.Redirect(w, r, redirect+"?"+back.Encode(), http.StatusFound)
}

func (a *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failWith != 0 {
		w.WriteHeader(a.failWith)
		return
	}
	clientID, secret := f.Get("client_id"), f.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		clientID, secret = u, p
	}
	if want := a.secrets[clientID]; want != "" && secret != want {
		WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	var resource string
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := a.codes[f.Get("code")]
		delete(a.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || g.clientID != clientID || g.redirect != f.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || g.resource != f.Get("resource") {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "code, verifier, redirect or resource mismatch"})
			return
		}
		resource = g.resource
	case "refresh_token":
		res, ok := a.refresh[f.Get("refresh_token")]
		delete(a.refresh, f.Get("refresh_token"))
		if !ok || f.Get("resource") != res {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token unknown or for another resource"})
			return
		}
		a.refreshes++
		resource = res
	default:
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	a.access[access] = accessGrant{resource: resource, expires: time.Now().Add(a.TTL)}
	a.refresh[refresh] = resource
	WriteJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(a.TTL.Seconds()), "scope": "mcp:tools",
	})
}

// Valid reports whether token is a live access token minted for resource.
func (a *AuthServer) Valid(token, resource string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := a.access[token]
	return ok && g.resource == resource && time.Now().Before(g.expires)
}

// Consent plays the user: it opens authURL, which the authorization server
// answers at once with a redirect to the client's callback, and returns
// that callback URL without following it.
func Consent(t *testing.T, authURL string) *url.URL {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatalf("open authorization url: %v", err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("authorization answered %d to %q, want a redirect", resp.StatusCode, resp.Header.Get("Location"))
	}
	return back
}

// Refreshes is how many refresh grants the token endpoint honoured.
func (a *AuthServer) Refreshes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refreshes
}

// FailTokens makes the token endpoint answer status (0: work again).
func (a *AuthServer) FailTokens(status int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failWith = status
}

// RevokeRefresh forgets every refresh token, as a server does when the user
// withdraws consent.
func (a *AuthServer) RevokeRefresh() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.refresh)
}

// MCPServer is a protected MCP endpoint at /mcp: 401 with a Bearer
// challenge unless the request carries a token the authorization server
// minted for it. Its exported fields are set before the first request.
type MCPServer struct {
	Srv *httptest.Server
	as  *AuthServer
	// mcp serves the requests let through; nil answers every POST with an
	// empty tools/list result.
	mcp http.Handler
	// ResourceDoc edits the protected-resource metadata before it is served.
	ResourceDoc func(m map[string]any)
	// Challenge is the WWW-Authenticate value; nil names the metadata URL.
	Challenge func(s *MCPServer) string
}

// NewMCPServer starts a protected endpoint for as in front of h (nil: an
// endpoint that lists no tools) and serves its protected-resource metadata;
// it stops with the test.
func NewMCPServer(t *testing.T, as *AuthServer, h http.Handler) *MCPServer {
	t.Helper()
	m := &MCPServer{as: as, mcp: h}
	mux := http.NewServeMux()
	m.routes(mux)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		doc := map[string]any{
			"resource":              m.URL(),
			"authorization_servers": []string{as.Issuer()},
			"scopes_supported":      []string{"mcp:tools"},
		}
		if m.ResourceDoc != nil {
			m.ResourceDoc(doc)
		}
		WriteJSON(w, http.StatusOK, doc)
	})
	m.Srv = httptest.NewServer(mux)
	t.Cleanup(m.Srv.Close)
	return m
}

// OnAuthServer serves a protected endpoint at as's own /mcp, with no
// protected-resource metadata: a server its own origin authorizes.
func OnAuthServer(as *AuthServer) *MCPServer {
	m := &MCPServer{as: as, Srv: as.Srv}
	m.routes(as.Mux)
	return m
}

// routes adds the protected endpoint to mux.
func (m *MCPServer) routes(mux *http.ServeMux) {
	as := m.as
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !as.Valid(tok, m.URL()) {
			c := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`, m.Srv.URL)
			if m.Challenge != nil {
				c = m.Challenge(m)
			}
			w.Header().Set("WWW-Authenticate", c)
			WriteJSON(w, http.StatusUnauthorized, map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32001, "message": "unauthorized"}})
			return
		}
		switch {
		case m.mcp != nil:
			m.mcp.ServeHTTP(w, r)
		case r.Method != http.MethodPost:
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
		default:
			WriteJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"tools": []any{}}})
		}
	})
}

// URL is the protected endpoint's URL: the resource tokens are minted for.
func (m *MCPServer) URL() string { return m.Srv.URL + "/mcp" }

// Call sends tools/list with the Authorization header auth ("" for none).
func (m *MCPServer) Call(t *testing.T, auth string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, m.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("call %s: %v", m.URL(), err)
	}
	resp.Body.Close()
	return resp
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
