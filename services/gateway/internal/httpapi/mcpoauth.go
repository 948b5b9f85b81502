package httpapi

import (
	"context"
	"html/template"
	"net/http"
	"net/url"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/mcpoauth"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// callbackParams are the query parameters an authorization server sends
// back (RFC 6749 §4.1.2, RFC 9207).
var callbackParams = []Param{
	{"code", "string", "the authorization code"},
	{"state", "string", "the state the sign-in was started with: it names the tenant and the server, and is single-use"},
	{"iss", "string", "the authorization server's issuer (RFC 9207), checked when sent"},
	{"error", "string", "the authorization server's error instead of a code (access_denied when the user refused)"},
	{"error_description", "string", "the error's description"},
}

func (s *Server) startMCPOAuth(l layerOf) func(context.Context, *http.Request, identity.Principal, api.MCPOAuthStart) (events.MCPOAuthStarted, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, in api.MCPOAuthStart) (events.MCPOAuthStarted, error) {
		return s.artifacts.StartMCPOAuth(ctx, p, l(r), r.PathValue("slug"), in)
	}
}

// callbackPage is what the browser the authorization server sent back
// shows: a sentence, and nothing to act on.
var callbackPage = template.Must(template.New("callback").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Clopen</title></head>
<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;line-height:1.5">
<h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

// mcpOAuthCallback serves GET /v1/mcp-oauth/callback, the one redirect URI
// every sign-in names. It needs no API key: the browser arriving here
// carries none, and the state is the authority. Only the tenant it names
// is read here, to route the callback; artifacts verifies the state.
func (s *Server) mcpOAuthCallback() endpoint {
	return endpoint{in: noneType, out: noneType, media: "text/html", status: http.StatusOK,
		serve: func(w http.ResponseWriter, r *http.Request, _ identity.Principal) {
			q := r.URL.Query()
			d, err := s.completeMCPOAuth(r.Context(), q)
			page := struct{ Title, Text string }{"Signed in", "Clopen may now use the MCP server " + d.Name + ". You can close this window."}
			status := http.StatusOK
			if err != nil {
				e, ok := apierr.StatusFor(err)
				if !ok {
					s.logger.ErrorContext(r.Context(), "mcp oauth callback", "err", err)
				}
				status = e.Status
				page.Title, page.Text = "Sign-in failed", e.Message
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
			w.Header().Set("Referrer-Policy", "no-referrer")
			w.WriteHeader(status)
			_ = callbackPage.Execute(w, page)
		}}
}

func (s *Server) completeMCPOAuth(ctx context.Context, q url.Values) (events.MCPServerDef, error) {
	tenant, err := mcpoauth.StateTenant(q.Get("state"))
	if err != nil {
		return events.MCPServerDef{}, apierr.New(apierr.ErrInvalid, "this sign-in link is not one Clopen made: %v", err)
	}
	return s.artifacts.CompleteMCPOAuth(ctx, tenant, q)
}
