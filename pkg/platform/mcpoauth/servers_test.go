package mcpoauth

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

// authServer is an OAuth 2.1 authorization server written for these tests:
// dynamic registration of public clients, authorization codes bound to a
// PKCE S256 challenge, a redirect URI and a resource, single-use codes and
// rotating refresh tokens. Consent is given by whoever GETs /authorize.
type authServer struct {
	srv *httptest.Server
	mux *http.ServeMux
	// path is the issuer's path ("" or "/tenant1").
	path string
	// meta edits the metadata document before it is served.
	meta func(m map[string]any)
	// oidcOnly serves metadata only at the OpenID location.
	oidcOnly bool
	// ttl is the lifetime of access tokens.
	ttl time.Duration

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

func newAuthServer(t *testing.T, path string) *authServer {
	t.Helper()
	a := &authServer{
		path: path, ttl: time.Hour,
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
	a.mux = mux
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// addClient registers a confidential client out of band, as an operator
// does with a server that offers no dynamic registration.
func (a *authServer) addClient(id, secret, redirect string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clients[id], a.secrets[id] = redirect, secret
}

func (a *authServer) issuer() string { return a.srv.URL + a.path }

func (a *authServer) metadata(w http.ResponseWriter, r *http.Request) {
	u := a.srv.URL
	wantAS := "/.well-known/oauth-authorization-server" + a.path
	wantOIDC := []string{"/.well-known/openid-configuration" + a.path, a.path + "/.well-known/openid-configuration"}
	switch {
	case r.URL.Path == wantAS && !a.oidcOnly:
	case r.URL.Path == wantOIDC[0], r.URL.Path == wantOIDC[1]:
	default:
		http.NotFound(w, r)
		return
	}
	m := map[string]any{
		"issuer":                                a.issuer(),
		"authorization_endpoint":                u + "/authorize",
		"token_endpoint":                        u + "/token",
		"registration_endpoint":                 u + "/register",
		"response_types_supported":              []string{"code"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                      []string{"mcp:tools"},
	}
	if a.meta != nil {
		a.meta(m)
	}
	writeJSON(w, http.StatusOK, m)
}

func (a *authServer) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) != 1 || req.AuthMethod != "none" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := "client-" + rand.Text()
	a.mu.Lock()
	a.clients[id] = req.RedirectURIs[0]
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "none"})
}

// authorize consents at once and redirects with a code, as a user clicking
// "allow" would; a request it cannot trust gets a 400 and no redirect.
func (a *authServer) authorize(w http.ResponseWriter, r *http.Request) {
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
	back := url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {a.issuer()}}
	http.Redirect(w, r, redirect+"?"+back.Encode(), http.StatusFound)
}

func (a *authServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
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
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
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
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "code, verifier, redirect or resource mismatch"})
			return
		}
		resource = g.resource
	case "refresh_token":
		res, ok := a.refresh[f.Get("refresh_token")]
		delete(a.refresh, f.Get("refresh_token"))
		if !ok || f.Get("resource") != res {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token unknown or for another resource"})
			return
		}
		a.refreshes++
		resource = res
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	a.access[access] = accessGrant{resource: resource, expires: time.Now().Add(a.ttl)}
	a.refresh[refresh] = resource
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(a.ttl.Seconds()), "scope": "mcp:tools",
	})
}

// valid reports whether token is a live access token minted for resource.
func (a *authServer) valid(token, resource string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := a.access[token]
	return ok && g.resource == resource && time.Now().Before(g.expires)
}

// failTokens makes the token endpoint answer status (0: work again).
func (a *authServer) failTokens(status int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failWith = status
}

// revokeRefresh forgets every refresh token, as a server does when the user
// withdraws consent.
func (a *authServer) revokeRefresh() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.refresh)
}

// mcpServer is a protected MCP endpoint at /mcp: 401 with a Bearer
// challenge unless the request carries a token the authorization server
// minted for it.
type mcpServer struct {
	srv *httptest.Server
	as  *authServer
	// resourceDoc edits the protected-resource metadata before it is served.
	resourceDoc func(m map[string]any)
	// challenge is the WWW-Authenticate value; nil names the metadata URL.
	challenge func(s *mcpServer) string
}

func newMCPServer(t *testing.T, as *authServer) *mcpServer {
	t.Helper()
	m := &mcpServer{as: as}
	mux := http.NewServeMux()
	m.routes(mux)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		doc := map[string]any{
			"resource":              m.url(),
			"authorization_servers": []string{as.issuer()},
			"scopes_supported":      []string{"mcp:tools"},
		}
		if m.resourceDoc != nil {
			m.resourceDoc(doc)
		}
		writeJSON(w, http.StatusOK, doc)
	})
	m.srv = httptest.NewServer(mux)
	t.Cleanup(m.srv.Close)
	return m
}

// routes adds the protected endpoint to mux.
func (m *mcpServer) routes(mux *http.ServeMux) {
	as := m.as
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !as.valid(tok, m.url()) {
			c := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`, m.srv.URL)
			if m.challenge != nil {
				c = m.challenge(m)
			}
			w.Header().Set("WWW-Authenticate", c)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32001, "message": "unauthorized"}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"tools": []any{}}})
	})
}

func (m *mcpServer) url() string { return m.srv.URL + "/mcp" }

// call sends tools/list with the Authorization header auth ("" for none).
func (m *mcpServer) call(t *testing.T, auth string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, m.url(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("call %s: %v", m.url(), err)
	}
	resp.Body.Close()
	return resp
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
