// Package httpapi serves the gateway's REST API: the route table in
// routes.go is the whole API, the OpenAPI document is generated from it, and
// every route's errors go through apierr.StatusFor. Authenticated routes
// resolve the bearer API key to an identity.Principal, spend one request of
// the key's rate budget, and act within the key's tenant only.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/pkg/platform/source"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/artifacts"
	"clopen.dev/services/gateway/internal/auth"
	"clopen.dev/services/gateway/internal/chats"
	"clopen.dev/services/gateway/internal/engines"
	"clopen.dev/services/gateway/internal/identity"
)

// Config tunes the REST API.
type Config struct {
	MaxBodyBytes   int64 // request bodies beyond this are 413 too_large
	MaxPromptBytes int   // the text of one prompt beyond this is 413 too_large
	MaxFileBytes   int64 // a file of a session's workspace beyond this is 413 too_large
	// MaxArchiveBytes bounds an uploaded project archive as sent (the JSON
	// body cap does not apply to it); ArchiveLimits bound what it unpacks
	// to (zero fields: source.Limits' defaults).
	MaxArchiveBytes int64
	ArchiveLimits   source.Limits
	// WebSessionTTL is how long the key a browser's sign-in mints lives.
	WebSessionTTL time.Duration
	// DevKeyFile, when set (by clopen dev), is the development key's file:
	// POST /v1/session/dev signs a browser on this machine in with it.
	DevKeyFile string
}

// DefaultConfig returns 1 MiB bodies, 256 KiB prompts, 10 MiB files,
// 100 MiB archives that unpack to at most 1 GiB in 100 000 entries, and web
// sessions of 12 hours.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 1 << 20, MaxPromptBytes: 256 << 10, MaxFileBytes: 10 << 20, MaxArchiveBytes: 100 << 20,
		ArchiveLimits: source.Limits{MaxBytes: 1 << 30, MaxFiles: 100_000}, WebSessionTTL: 12 * time.Hour}
}

// Live serves the WebSocket of an authenticated principal.
type Live interface {
	ServeWS(w http.ResponseWriter, r *http.Request, p identity.Principal)
}

// Server holds what the handlers use.
type Server struct {
	cfg       Config
	store     *identity.Store
	auth      *auth.Authenticator
	chats     *chats.Chats
	artifacts *artifacts.Artifacts
	engines   *engines.Engines
	snapshots snapshot.Store
	live      Live
	health    http.Handler
	ui        http.Handler
	csrf      *http.CrossOriginProtection
	logger    *slog.Logger
	openapi   []byte
}

// Deps are the parts the REST API is built on.
type Deps struct {
	Store     *identity.Store
	Auth      *auth.Authenticator
	Chats     *chats.Chats
	Artifacts *artifacts.Artifacts
	Engines   *engines.Engines // asks the engine workers: catalogs, generation
	Snapshots snapshot.Store   // the sessions' and projects' files
	Live      Live
	Health    http.Handler // serves /healthz and /readyz
	// UI serves the web app at every path that is not the API's; nil
	// answers such paths with a JSON 404 like any unknown route.
	UI     http.Handler
	Logger *slog.Logger
}

// New builds the API.
func New(cfg Config, d Deps) *Server {
	def := DefaultConfig()
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = def.MaxBodyBytes
	}
	if cfg.MaxPromptBytes <= 0 {
		cfg.MaxPromptBytes = def.MaxPromptBytes
	}
	if cfg.MaxArchiveBytes <= 0 {
		cfg.MaxArchiveBytes = def.MaxArchiveBytes
	}
	if cfg.ArchiveLimits == (source.Limits{}) {
		cfg.ArchiveLimits = def.ArchiveLimits
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = def.MaxFileBytes
	}
	if cfg.WebSessionTTL <= 0 {
		cfg.WebSessionTTL = def.WebSessionTTL
	}
	s := &Server{cfg: cfg, store: d.Store, auth: d.Auth, chats: d.Chats, artifacts: d.Artifacts, live: d.Live, health: d.Health,
		ui: d.UI, csrf: http.NewCrossOriginProtection(), logger: d.Logger}
	s.engines, s.snapshots = d.Engines, d.Snapshots
	s.openapi = mustJSON(openAPI(s.routes()))
	return s
}

// Handler returns the HTTP handler serving every route of the table.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.Method+" "+rt.Path, s.wrap(rt))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s.ui == nil || isAPIPath(r.URL.Path) || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			s.writeError(w, r, errNoRoute(r))
			return
		}
		s.ui.ServeHTTP(w, r)
	})
	return mux
}

// isAPIPath reports whether path is under /v1, where an unknown route is a
// JSON 404 rather than the web app.
func isAPIPath(path string) bool { return path == "/v1" || strings.HasPrefix(path, "/v1/") }

// wrap adds authentication and rate limiting to an authenticated route.
func (s *Server) wrap(rt Route) http.Handler {
	if !rt.Auth {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.ep.serve(w, r, identity.Principal{}) })
	}
	allowQuery := rt.Path == wsPath
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, fromCookie := auth.Credential(r, allowQuery)
		if fromCookie {
			// The browser attaches the cookie to whatever asks: only
			// requests from the app's own origin may act with it. (The
			// WebSocket's origin is checked when it is accepted.)
			if err := s.sameOrigin(r); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		p, err := s.auth.Authenticate(r.Context(), key)
		if err == nil {
			err = s.auth.Allow(p.KeyID)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		rt.ep.serve(w, r, p)
	})
}

// me answers GET /v1/me.
func (s *Server) me(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Me, error) {
	u, err := s.store.User(ctx, p.TenantID, p.UserID)
	if err != nil {
		return api.Me{}, err
	}
	t, err := s.store.Tenant(ctx, p.TenantID)
	return api.Me{User: u, Tenant: t}, err
}
