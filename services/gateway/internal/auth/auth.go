// Package auth turns a request's bearer API key into an identity.Principal
// and keeps each key within its request budget. It holds per-key state in
// memory only (rate limiter, last-used bookkeeping), so every replica limits
// on its own.
package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Config tunes authentication.
type Config struct {
	Rate  float64 // sustained requests per second per key
	Burst int     // requests a key may make at once
}

// DefaultConfig is generous: interactive clients never notice it.
func DefaultConfig() Config { return Config{Rate: 50, Burst: 100} }

// KeyStore is what authentication reads and writes.
type KeyStore interface {
	LookupKey(ctx context.Context, secret string) (identity.Principal, identity.KeyStatus, error)
	TouchKey(ctx context.Context, tenant, id string) error
}

// touchEvery bounds how often a key's last_used_at is written.
const touchEvery = time.Minute

// idleAfter is how long per-key state outlives the key's last request.
const idleAfter = 10 * time.Minute

// Authenticator resolves API keys. It is safe for concurrent use.
type Authenticator struct {
	store  KeyStore
	cfg    Config
	logger *slog.Logger
	now    func() time.Time

	mu        sync.Mutex
	keys      map[string]*keyState
	lastSweep time.Time
}

type keyState struct {
	limiter *rate.Limiter
	touched time.Time
	seen    time.Time
}

// New returns an authenticator over store.
func New(store KeyStore, cfg Config, logger *slog.Logger) *Authenticator {
	if cfg.Rate <= 0 || cfg.Burst <= 0 {
		cfg = DefaultConfig()
	}
	zeroCounters(context.Background())
	return &Authenticator{store: store, cfg: cfg, logger: logger, now: time.Now, keys: map[string]*keyState{}}
}

// Authenticate returns the principal of secret. A malformed, unknown,
// revoked or expired key is apierr.ErrUnauthenticated; a database failure is
// returned as it is.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (identity.Principal, error) {
	if secret == "" {
		countRejected(ctx, "missing")
		return identity.Principal{}, apierr.New(apierr.ErrUnauthenticated, "missing api key: send Authorization: Bearer clp_...")
	}
	if !identity.WellFormedKey(secret) {
		countRejected(ctx, "invalid")
		return identity.Principal{}, apierr.New(apierr.ErrUnauthenticated, "invalid api key")
	}
	p, st, err := a.store.LookupKey(ctx, secret)
	switch {
	case errors.Is(err, apierr.ErrNotFound):
		countRejected(ctx, "invalid")
		return p, apierr.New(apierr.ErrUnauthenticated, "invalid api key")
	case err != nil:
		return p, err
	case st.RevokedAt != nil:
		countRejected(ctx, "revoked")
		return identity.Principal{}, apierr.New(apierr.ErrUnauthenticated, "api key revoked")
	case st.ExpiresAt != nil && !a.now().Before(*st.ExpiresAt):
		countRejected(ctx, "expired")
		return identity.Principal{}, apierr.New(apierr.ErrUnauthenticated, "api key expired")
	}
	if a.dueForTouch(p.KeyID) {
		// Bookkeeping only: a failure must not refuse an authentic request.
		if err := a.store.TouchKey(ctx, p.TenantID, p.KeyID); err != nil {
			a.logger.WarnContext(ctx, "record api key use", "key_id", p.KeyID, "err", err)
		}
	}
	return p, nil
}

// Allow spends one request of key's budget, or returns an
// *apierr.RateLimitedError saying when to retry.
func (a *Authenticator) Allow(keyID string) error {
	a.mu.Lock()
	st := a.state(keyID)
	r := st.limiter.ReserveN(a.now(), 1)
	a.mu.Unlock()
	if d := r.DelayFrom(a.now()); d > 0 {
		r.CancelAt(a.now())
		rateLimited.Add(context.Background(), 1)
		return &apierr.RateLimitedError{RetryAfter: d}
	}
	return nil
}

func (a *Authenticator) dueForTouch(keyID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state(keyID)
	if now := a.now(); now.Sub(st.touched) >= touchEvery {
		st.touched = now
		return true
	}
	return false
}

// state returns key's state, creating it; a.mu is held. Keys idle for
// idleAfter are forgotten, at most once a minute, so the map stays as small
// as the set of active keys.
func (a *Authenticator) state(keyID string) *keyState {
	now := a.now()
	if now.Sub(a.lastSweep) > time.Minute {
		a.lastSweep = now
		for id, st := range a.keys {
			if now.Sub(st.seen) > idleAfter {
				delete(a.keys, id)
			}
		}
	}
	st, ok := a.keys[keyID]
	if !ok {
		st = &keyState{limiter: rate.NewLimiter(rate.Limit(a.cfg.Rate), a.cfg.Burst)}
		a.keys[keyID] = st
	}
	st.seen = now
	return st
}

// SessionCookie is the cookie of a browser's web session: it holds a
// short-lived API key minted for the session at sign-in (see the
// /v1/session routes), never the key the user signed in with.
const SessionCookie = "clopen_session"

// Credential returns the API key of r and whether it came from the session
// cookie: the Authorization bearer token; else, when allowQuery is set (the
// WebSocket route), the access_token query parameter; else the session
// cookie. A key from the cookie rides on every request the browser makes to
// the gateway, so its caller must refuse cross-origin requests
// (http.CrossOriginProtection) before acting on it.
func Credential(r *http.Request, allowQuery bool) (key string, fromCookie bool) {
	if key := BearerToken(r, allowQuery); key != "" || r.Header.Get("Authorization") != "" {
		return key, false
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

// BearerToken returns the API key of r: the Authorization bearer token, or,
// when allowQuery is set (the WebSocket route, which browsers cannot give
// headers), the access_token query parameter.
func BearerToken(r *http.Request, allowQuery bool) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
		return ""
	}
	if allowQuery {
		return r.URL.Query().Get("access_token")
	}
	return ""
}
