// Package mcpoauth authorizes Clopen, as an MCP client, against remote MCP
// servers that require OAuth, following the MCP authorization spec:
// RFC 9728 protected-resource metadata, RFC 8414 authorization server
// metadata (or OpenID configuration), RFC 7591 dynamic client registration
// of a public client, the authorization code flow with PKCE S256 (servers
// without S256 are refused), the RFC 8707 resource parameter, and refresh.
//
// It stores nothing itself: the caller keeps Server and Token sealed with
// the tenant's server row, and backs PendingStore (MemPending is the
// in-memory one; mcpoauthtest.RunPendingStore is the suite a durable one
// must pass; authserver is an authorization server and a protected MCP
// endpoint for tests). A Client is safe for concurrent use; every replica that
// may serve the callback needs the same StateKey and PendingStore.
//
// Connecting a server (an admin of the tenant asks, through the gateway):
//
//	challenge, err := c.Challenge(ctx, serverURL)   // its 401's WWW-Authenticate
//	srv, err := c.Discover(ctx, serverURL, challenge)
//	srv, err = c.Register(ctx, srv)        // ErrNoRegistration: set srv.ClientID/ClientSecret from config
//	authURL, err := c.Start(ctx, tenant, slug, srv)
//	// answer authURL; the UI opens it and polls the server's status
//
// The gateway's stable callback route, GET /v1/mcp-oauth/callback (the
// Config.RedirectURL every registration names), is served to the browser
// the authorization server redirects back. It carries no API key: the
// signed state is the authority, and StateTenant names the tenant whose
// service completes it:
//
//	g, err := c.Complete(ctx, tenant, r.URL.Query())
//	// store g.Server and g.Token sealed on (g.Tenant, g.Slug); ErrState → 400,
//	// ErrDenied → show the server's refusal, ErrNeedsAuth → start again,
//	// ErrUnreachable → retry
//
// The state names tenant, slug and the pending record holding the PKCE
// verifier, and is signed and expiring; Complete refuses a state issued to
// another tenant and consumes the pending record, so a callback cannot be
// replayed or carried across tenants.
//
// Before a run that uses the server (the worker or the bridge, whichever
// injects the upstream Authorization header):
//
//	tok, changed, err := c.FreshToken(ctx, srv, tok)
//	// changed: store tok before using it (refresh tokens may rotate);
//	// ErrNeedsAuth → mark the server needs_auth, ErrUnreachable → unreachable
//	req.Header.Set("Authorization", tok.Header())
//
// Every URL followed, redirects included, must be https; with the default
// HTTP client it must also resolve to a public address. A host
// Endpoints.Allow admits may be internal, and reached over plain http if
// it is loopback.
package mcpoauth
