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
}

// DefaultConfig returns 1 MiB bodies and 256 KiB prompts.
func DefaultConfig() Config { return Config{MaxBodyBytes: 1 << 20, MaxPromptBytes: 256 << 10} }

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
	live      Live
	health    http.Handler
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
	Live      Live
	Health    http.Handler // serves /healthz and /readyz
	Logger    *slog.Logger
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
	s := &Server{cfg: cfg, store: d.Store, auth: d.Auth, chats: d.Chats, artifacts: d.Artifacts, live: d.Live, health: d.Health, logger: d.Logger}
	s.engines = d.Engines
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
		s.writeError(w, r, errNoRoute(r))
	})
	return mux
}

// wrap adds authentication and rate limiting to an authenticated route.
func (s *Server) wrap(rt Route) http.Handler {
	if !rt.Auth {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.ep.serve(w, r, identity.Principal{}) })
	}
	allowQuery := rt.Path == wsPath
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.auth.Authenticate(r.Context(), auth.BearerToken(r, allowQuery))
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
