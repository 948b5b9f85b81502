package httpapi

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/auth"
	"clopen.dev/services/gateway/internal/identity"
)

// A web session is how the browser app authenticates without holding an API
// key in script-readable storage or in a URL. Signing in with a key (or, under
// `clopen dev`, as the development user) mints a new key for the same user
// that expires after WebSessionTTL, named sessionKeyName, and sets it as an
// HttpOnly, SameSite=Strict cookie with no expiry of its own (the browser
// drops it when it closes). Signing out revokes that key. Every request
// authenticated by the cookie must pass http.CrossOriginProtection, so
// another site cannot make the browser act with it.

// sessionKeyName names the keys minted for web sessions in the key list.
const sessionKeyName = "web session"

// sessionRoutes are the public /v1/session routes.
func (s *Server) sessionRoutes() []Route {
	route := func(method, path, summary string, ep endpoint) Route {
		return Route{Method: method, Path: path, Summary: summary, Tag: "session", ep: ep}
	}
	return []Route{
		route("GET", "/v1/session", "Whether this browser's session cookie is signed in, and whether the development sign-in is offered", handle(s, http.StatusOK, s.webSession)),
		withErrors(route("POST", "/v1/session", "Sign in with an API key: a session key for the same user is set as an HttpOnly cookie (the key given is not kept)", handleW(s, http.StatusCreated, s.signIn)),
			map[int]string{http.StatusUnauthorized: "the API key is invalid, revoked or expired",
				http.StatusForbidden: "a cross-origin request: sign in from the app's own origin"}),
		withErrors(route("POST", "/v1/session/dev", "Sign in as the development user, without a key (clopen dev only, from this machine)", handleW(s, http.StatusCreated, s.devSignIn)),
			map[int]string{http.StatusNotFound: "this gateway does not run under clopen dev",
				http.StatusForbidden: "the request does not come from this machine, or not from the app's own origin"}),
		route("DELETE", "/v1/session", "Sign out: the session's key is revoked and its cookie cleared", handleW(s, http.StatusNoContent, s.signOut)),
	}
}

func (s *Server) webSession(ctx context.Context, r *http.Request, _ identity.Principal, _ none) (api.WebSession, error) {
	out := api.WebSession{DevSignIn: s.cfg.DevKeyFile != "" && fromThisMachine(r)}
	if key, fromCookie := auth.Credential(r, false); fromCookie {
		_, err := s.auth.Authenticate(ctx, key)
		out.SignedIn = err == nil
	}
	return out, nil
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request, _ identity.Principal, in api.SignIn) (api.Me, error) {
	if err := s.sameOrigin(r); err != nil {
		return api.Me{}, err
	}
	key := strings.TrimSpace(in.APIKey)
	if key == "" {
		return api.Me{}, apierr.New(apierr.ErrInvalid, "apiKey: missing")
	}
	return s.startSession(w, r, key)
}

// devSignIn signs in with the development key `clopen dev` keeps. Only a
// request from this machine, addressed to it by a loopback name, may: a
// page of another site whose name an attacker points at 127.0.0.1 (DNS
// rebinding) reaches the gateway with its own Host, and is refused.
func (s *Server) devSignIn(w http.ResponseWriter, r *http.Request, _ identity.Principal, _ none) (api.Me, error) {
	if s.cfg.DevKeyFile == "" {
		return api.Me{}, apierr.New(apierr.ErrNotFound, "the development sign-in is offered only by clopen dev")
	}
	if !fromThisMachine(r) {
		return api.Me{}, apierr.New(apierr.ErrForbidden, "the development sign-in is offered only to this machine, at a loopback address; sign in with an API key")
	}
	if err := s.sameOrigin(r); err != nil {
		return api.Me{}, err
	}
	b, err := os.ReadFile(s.cfg.DevKeyFile)
	if err != nil {
		return api.Me{}, apierr.New(apierr.ErrNotFound, "no development key yet: clopen dev writes it once it has started")
	}
	return s.startSession(w, r, strings.TrimSpace(string(b)))
}

// startSession authenticates key, mints the session's own key for the same
// user and sets it as the session cookie.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, key string) (api.Me, error) {
	ctx := r.Context()
	p, err := s.auth.Authenticate(ctx, key)
	if err == nil {
		err = s.auth.Allow(p.KeyID)
	}
	if err != nil {
		return api.Me{}, err
	}
	expires := time.Now().Add(s.cfg.WebSessionTTL)
	k, err := s.store.CreateKey(ctx, p.Actor(), p.TenantID, p.UserID, sessionKeyName, &expires)
	if err != nil {
		return api.Me{}, err
	}
	me, err := s.me(ctx, r, p, none{})
	if err != nil {
		return api.Me{}, err
	}
	http.SetCookie(w, sessionCookie(r, k.Key, 0))
	return me, nil
}

// signOut revokes the session's key, when the cookie still holds a live
// one, and clears the cookie either way.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, _ identity.Principal, _ none) (none, error) {
	if err := s.sameOrigin(r); err != nil {
		return none{}, err
	}
	ctx := r.Context()
	if key, fromCookie := auth.Credential(r, false); fromCookie {
		if p, err := s.auth.Authenticate(ctx, key); err == nil {
			if err := s.store.RevokeKey(ctx, p.Actor(), p.TenantID, p.KeyID, p.UserID); err != nil {
				return none{}, err
			}
		}
	}
	http.SetCookie(w, sessionCookie(r, "", -1))
	return none{}, nil
}

// sameOrigin refuses a state-changing request a browser sent from another
// origin (Sec-Fetch-Site, else Origin against Host). Requests without those
// headers (curl, the Go client) pass.
func (s *Server) sameOrigin(r *http.Request) error {
	if err := s.csrf.Check(r); err != nil {
		return apierr.New(apierr.ErrForbidden, "cross-origin request refused: the session cookie acts only for the app's own origin")
	}
	return nil
}

// sessionCookie is the session cookie holding key; maxAge < 0 deletes it.
// It is Secure when the request arrived over TLS, directly or through a
// proxy that says so.
func sessionCookie(r *http.Request, key string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: auth.SessionCookie, Value: key, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")}
}

// fromThisMachine reports whether r came from a loopback address and names
// the gateway by a loopback host.
func fromThisMachine(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || !isLoopback(host) {
		return false
	}
	name := r.Host
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	return isLoopback(strings.Trim(name, "[]"))
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
