package artifacts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/mcpoauth"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

// Signing in to remote MCP servers that want OAuth runs here, not in the
// gateway: the grant is sealed on the server's row, which only this service
// opens, and the pending sign-ins (PKCE verifiers) are sealed beside it.
// The gateway forwards the start and the callback over the bus.

// EnvPublicURL is the gateway's public base URL, as users' browsers reach
// it. The OAuth callback every sign-in names is this URL plus
// OAuthCallbackPath; without it no sign-in starts.
const EnvPublicURL = "CLOPEN_PUBLIC_URL"

// OAuthCallbackPath is the gateway's stable callback route.
const OAuthCallbackPath = "/v1/mcp-oauth/callback"

// stateKeyLabel names the key derived from the master key that signs the
// sign-ins' state: every replica holding the master key derives the same.
const stateKeyLabel = "clopen mcp oauth state v1"

// newOAuth returns the sign-in client, or nil when cfg.PublicURL is empty
// (sign-ins are then refused, and held grants are used as they are).
func newOAuth(cfg Config, key *seal.Key, st *store.Store) (*mcpoauth.Client, error) {
	if cfg.PublicURL == "" {
		return nil, nil
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s %q: want the gateway's absolute http(s) base URL", EnvPublicURL, cfg.PublicURL)
	}
	allow := cfg.Egress.Allow
	return mcpoauth.New(mcpoauth.Config{
		RedirectURL: strings.TrimSuffix(cfg.PublicURL, "/") + OAuthCallbackPath,
		StateKey:    key.Derive(stateKeyLabel),
		Pending:     store.OAuthPending{S: st},
		// The hosts a provider's URL may name on internal addresses are
		// the ones an MCP server's authorization server may, too.
		Endpoints: mcpoauth.Endpoints{Allow: func(host string) bool { return slices.Contains(allow, strings.ToLower(host)) }},
	})
}

// startMCPOAuth begins a sign-in to an http server of the caller's scope:
// the server's challenge, discovery, a client (registered, or the one the
// request names), and the pending sign-in. It answers the URL to send the
// user to.
func (a *api) startMCPOAuth(ctx context.Context, t string, r events.MCPOAuthStart) (events.MCPOAuthStarted, error) {
	var out events.MCPOAuthStarted
	d, err := a.st.GetMCPServer(ctx, t, r.ProjectID, r.Slug)
	if err != nil {
		return out, err
	}
	if d.Transport != events.MCPHTTP {
		return out, svc.Invalid("MCP server %s is a stdio server; only remote (http) servers sign in with OAuth", d.Slug)
	}
	if d.ManagedBy != "" {
		return out, svc.Errorf(http.StatusConflict, "conflict",
			"MCP server %s is managed by %s, whose credential it uses: sign in through the integration, not the server", d.Slug, d.ManagedBy)
	}
	if a.oauth == nil {
		return out, svc.Errorf(http.StatusConflict, "public_url_unset",
			"MCP sign-in needs the gateway's public URL for its callback: set %s on the artifacts service", EnvPublicURL)
	}
	challenge, err := a.oauth.Challenge(ctx, d.URL)
	if err != nil {
		return out, err
	}
	srv, err := a.oauth.Discover(ctx, d.URL, challenge)
	if err != nil {
		return out, err
	}
	if r.ClientID != "" {
		srv.ClientID, srv.ClientSecret = r.ClientID, mcpoauth.Secret(r.ClientSecret)
	} else if srv, err = a.oauth.Register(ctx, srv); errors.Is(err, mcpoauth.ErrNoRegistration) {
		return out, svc.Errorf(http.StatusBadRequest, "oauth_no_registration",
			"%s offers no dynamic client registration: register a client there with the redirect URI %s "+
				"and send its clientId (and clientSecret)", srv.Issuer, a.redirect)
	} else if err != nil {
		return out, err
	}
	// The state names the row's id, not its slug: a server deleted and
	// added again under the slug does not take a grant meant for the old.
	out.AuthorizationURL, err = a.oauth.Start(ctx, t, d.ID, srv)
	return out, err
}

// completeMCPOAuth is the callback's: the state must verify for the tenant
// it names and consume its pending sign-in; the grant is then sealed on
// the server the sign-in was started for.
func (a *api) completeMCPOAuth(ctx context.Context, t string, r events.MCPOAuthComplete) (events.MCPServerDef, error) {
	if a.oauth == nil {
		return events.MCPServerDef{}, svc.Errorf(http.StatusConflict, "public_url_unset", "MCP sign-in is not configured (%s)", EnvPublicURL)
	}
	g, err := a.oauth.Complete(ctx, t, url.Values(r.Query))
	if err != nil {
		return events.MCPServerDef{}, err
	}
	return a.st.SetMCPGrant(ctx, t, g.Slug, store.MCPGrant{Server: g.Server, Token: g.Token})
}

// refresher is the store's GrantRefresher: the grant's token, refreshed
// when it is about to expire. Without a sign-in client the token is used
// as it is.
func (a *api) refresher() store.GrantRefresher {
	return func(ctx context.Context, g store.MCPGrant) (mcpoauth.Token, bool, error) {
		if a.oauth == nil {
			return g.Token, false, nil
		}
		return a.oauth.FreshToken(ctx, g.Server, g.Token)
	}
}

// oauthErr classifies a sign-in's failure: part of apiErr.
func oauthErr(err error) (*events.APIError, bool) {
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{mcpoauth.ErrState, http.StatusBadRequest, "oauth_state"},
		{mcpoauth.ErrDenied, http.StatusForbidden, "oauth_denied"},
		{mcpoauth.ErrNeedsAuth, http.StatusForbidden, "needs_auth"},
		{mcpoauth.ErrMetadata, http.StatusUnprocessableEntity, "oauth_metadata"},
		{mcpoauth.ErrUnreachable, http.StatusBadGateway, "unreachable"},
	} {
		if errors.Is(err, c.err) {
			return svc.Errorf(c.status, c.code, "%s", err.Error()), true
		}
	}
	return nil, false
}
