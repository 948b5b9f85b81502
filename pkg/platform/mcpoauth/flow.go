package mcpoauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/oauth2"
)

// Register obtains a client for srv by dynamic client registration (RFC
// 7591): a public client (no secret, token_endpoint_auth_method none) whose
// one redirect URI is the configured callback. It returns srv with ClientID
// set. Without a registration endpoint it returns ErrNoRegistration, and
// the caller sets ClientID (and ClientSecret) from its configuration.
func (c *Client) Register(ctx context.Context, srv Server) (Server, error) {
	if srv.RegistrationEndpoint == "" {
		return srv, fmt.Errorf("register at %s: %w", srv.Issuer, ErrNoRegistration)
	}
	if _, err := c.cfg.Endpoints.Check("registration_endpoint", srv.RegistrationEndpoint); err != nil {
		return srv, err
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                c.cfg.ClientName,
		"redirect_uris":              []string{c.cfg.RedirectURL},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"scope":                      strings.Join(srv.Scopes, " "),
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return srv, fmt.Errorf("register: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, status, err := c.do(req)
	if err != nil {
		return srv, fmt.Errorf("register: %w", err)
	}
	if status != http.StatusCreated && status != http.StatusOK {
		if status >= 500 {
			return srv, fmt.Errorf("register at %s: %w: status %d", srv.RegistrationEndpoint, ErrUnreachable, status)
		}
		return srv, fmt.Errorf("register at %s: %w: status %d: %.200s", srv.RegistrationEndpoint, ErrMetadata, status, resp)
	}
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal(resp, &reg); err != nil || reg.ClientID == "" {
		return srv, fmt.Errorf("register at %s: %w: answer has no client_id", srv.RegistrationEndpoint, ErrMetadata)
	}
	srv.ClientID, srv.ClientSecret = reg.ClientID, Secret(reg.ClientSecret)
	return srv, nil
}

// Start begins an authorization of srv (which has a client) for one
// tenant's server slug: it keeps a PKCE verifier in the pending store and
// returns the URL to send the user to. That URL carries the S256 challenge,
// the scopes, the RFC 8707 resource and a signed state naming tenant, slug
// and the pending record; the state expires after Config.StateTTL.
func (c *Client) Start(ctx context.Context, tenant, slug string, srv Server) (string, error) {
	if tenant == "" || slug == "" {
		return "", errors.New("start authorization: tenant and slug are required")
	}
	if srv.ClientID == "" {
		return "", fmt.Errorf("start authorization of %s: no client; Register first or configure one", slug)
	}
	if _, err := c.cfg.Endpoints.Check("authorization_endpoint", srv.AuthorizationEndpoint); err != nil {
		return "", err
	}
	p := Pending{
		Nonce:    rand.Text(),
		Tenant:   tenant,
		Slug:     slug,
		Server:   srv,
		Verifier: Secret(oauth2.GenerateVerifier()),
		Expires:  c.cfg.Now().Add(c.cfg.StateTTL),
	}
	if err := c.cfg.Pending.Put(ctx, p); err != nil {
		return "", fmt.Errorf("start authorization of %s: keep pending: %w", slug, err)
	}
	state := signState(c.cfg.StateKey, stateClaims{Tenant: tenant, Slug: slug, Nonce: p.Nonce, Expires: p.Expires.Unix()})
	return c.oauth2(srv).AuthCodeURL(state,
		oauth2.S256ChallengeOption(string(p.Verifier)),
		oauth2.SetAuthURLParam("resource", srv.Resource)), nil
}

// Grant is the outcome of a completed authorization: which server of which
// tenant it is for, the server (with its client) and the token. The caller
// stores Server and Token sealed on the tenant's server row named by Slug.
type Grant struct {
	Tenant string `json:"tenant"`
	Slug   string `json:"slug"`
	Server Server `json:"server"`
	Token  Token  `json:"token"`
}

// LogValue describes g without its credentials; the caller's structured
// logs would otherwise marshal its JSON, secrets included.
func (g Grant) LogValue() slog.Value {
	return slog.GroupValue(slog.String("tenant", g.Tenant), slog.String("slug", g.Slug),
		slog.Any("server", g.Server), slog.Any("token", g.Token))
}

// Complete finishes an authorization from the callback's query (code,
// state, and iss or error) for the tenant of the signed-in user serving the
// callback. The state must verify, be unexpired, belong to tenant and name
// a pending record, which is consumed so a replay finds nothing. Errors wrap
// ErrState (forged, expired, replayed, other tenant), ErrDenied (the server
// sent an error), ErrNeedsAuth (the code or verifier was refused) or
// ErrUnreachable.
func (c *Client) Complete(ctx context.Context, tenant string, query url.Values) (Grant, error) {
	claims, err := verifyState(c.cfg.StateKey, query.Get("state"), tenant, c.cfg.Now())
	if err != nil {
		return Grant{}, fmt.Errorf("complete authorization: %w", err)
	}
	p, err := c.cfg.Pending.Take(ctx, claims.Nonce)
	if errors.Is(err, ErrNoPending) {
		return Grant{}, fmt.Errorf("complete authorization of %s: %w: already used or unknown", claims.Slug, ErrState)
	}
	if err != nil {
		return Grant{}, fmt.Errorf("complete authorization of %s: %w", claims.Slug, err)
	}
	if p.Tenant != claims.Tenant || p.Slug != claims.Slug || c.cfg.Now().After(p.Expires) {
		return Grant{}, fmt.Errorf("complete authorization of %s: %w: pending record does not match", claims.Slug, ErrState)
	}
	if e := query.Get("error"); e != "" {
		return Grant{}, fmt.Errorf("complete authorization of %s: %w: %s %s", p.Slug, ErrDenied, e, query.Get("error_description"))
	}
	// RFC 9207: an issuer named in the callback must be the one asked,
	// which defeats a mix-up between two authorization servers.
	if iss := query.Get("iss"); iss != "" && strings.TrimSuffix(iss, "/") != strings.TrimSuffix(p.Server.Issuer, "/") {
		return Grant{}, fmt.Errorf("complete authorization of %s: %w: callback from issuer %q, want %q", p.Slug, ErrState, iss, p.Server.Issuer)
	}
	code := query.Get("code")
	if code == "" {
		return Grant{}, fmt.Errorf("complete authorization of %s: %w: no code", p.Slug, ErrDenied)
	}
	o, err := c.oauth2(p.Server).Exchange(c.httpContext(ctx), code,
		oauth2.VerifierOption(string(p.Verifier)),
		oauth2.SetAuthURLParam("resource", p.Server.Resource))
	if err != nil {
		return Grant{}, classify("exchange code for "+p.Slug, err)
	}
	return Grant{Tenant: p.Tenant, Slug: p.Slug, Server: p.Server, Token: tokenFrom(o, Token{Scopes: p.Server.Scopes})}, nil
}

// FreshToken returns tok when it is valid for longer than the refresh
// margin, and otherwise a refreshed token with changed true: the caller
// then stores it before using it. A token that never expires is returned
// as is. Errors wrap ErrNeedsAuth (no refresh token, or the authorization
// server refused it: invalid_grant) or ErrUnreachable.
func (c *Client) FreshToken(ctx context.Context, srv Server, tok Token) (Token, bool, error) {
	if tok.AccessToken != "" && (tok.Expiry.IsZero() || tok.Expiry.Sub(c.cfg.Now()) > c.cfg.RefreshMargin) {
		return tok, false, nil
	}
	if tok.RefreshToken == "" {
		return Token{}, false, fmt.Errorf("refresh token for %s: %w: expired and no refresh token", srv.Resource, ErrNeedsAuth)
	}
	if _, err := c.cfg.Endpoints.Check("token_endpoint", srv.TokenEndpoint); err != nil {
		return Token{}, false, err
	}
	// x/oauth2 sends no extra parameter on a refresh; the MCP spec wants
	// the resource on every token request, so the form gains it on the way.
	hc := *c.cfg.HTTPClient
	hc.Transport = withResource{next: hc.Transport, resource: srv.Resource}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, &hc)
	// An empty access token makes oauth2 refresh now, whatever the expiry.
	o, err := c.oauth2(srv).TokenSource(ctx, &oauth2.Token{RefreshToken: string(tok.RefreshToken)}).Token()
	if err != nil {
		return Token{}, false, classify("refresh token for "+srv.Resource, err)
	}
	return tokenFrom(o, tok), true, nil
}

// oauth2 is the x/oauth2 view of srv. A client without a secret is public
// and sends its id in the form; for one with a secret x/oauth2 detects
// whether the server wants HTTP Basic or form parameters.
func (c *Client) oauth2(srv Server) *oauth2.Config {
	style := oauth2.AuthStyleAutoDetect
	if srv.ClientSecret == "" {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{
		ClientID:     srv.ClientID,
		ClientSecret: string(srv.ClientSecret),
		RedirectURL:  c.cfg.RedirectURL,
		Scopes:       slices.Clone(srv.Scopes),
		Endpoint: oauth2.Endpoint{
			AuthURL:   srv.AuthorizationEndpoint,
			TokenURL:  srv.TokenEndpoint,
			AuthStyle: style,
		},
	}
}

// httpContext makes x/oauth2 use the configured HTTP client.
func (c *Client) httpContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.cfg.HTTPClient)
}

// withResource adds the RFC 8707 resource parameter to refresh requests.
type withResource struct {
	next     http.RoundTripper
	resource string
}

func (w withResource) RoundTrip(req *http.Request) (*http.Response, error) {
	next := w.next
	if next == nil {
		next = http.DefaultTransport
	}
	if req.Method != http.MethodPost || req.Body == nil || req.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		return next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err == nil && form.Get("grant_type") == "refresh_token" && !form.Has("resource") {
		form.Set("resource", w.resource)
		body = []byte(form.Encode())
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return next.RoundTrip(r)
}
