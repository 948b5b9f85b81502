package httpapi

import (
	"context"
	"net/http"

	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

func adminOnly(p identity.Principal, what string) error {
	if !p.IsAdmin() {
		return apierr.New(apierr.ErrForbidden, "only tenant admins may %s", what)
	}
	return nil
}

func (s *Server) listUsers(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (api.Users, error) {
	if err := adminOnly(p, "list users"); err != nil {
		return api.Users{}, err
	}
	users, err := s.store.ListUsers(ctx, p.TenantID)
	return api.Users{Users: users}, err
}

func (s *Server) createUser(ctx context.Context, _ *http.Request, p identity.Principal, in api.CreateUser) (api.User, error) {
	if err := adminOnly(p, "create users"); err != nil {
		return api.User{}, err
	}
	return s.store.CreateUser(ctx, p.Actor(), p.TenantID, in)
}

// keyOwner resolves whose keys a request is about: the caller's, or for an
// admin any user of the tenant.
func (s *Server) keyOwner(ctx context.Context, p identity.Principal, user string) (string, error) {
	switch {
	case user == "" || user == p.UserID:
		return p.UserID, nil
	case !p.IsAdmin():
		return "", apierr.New(apierr.ErrForbidden, "members manage only their own api keys")
	}
	u, err := s.store.User(ctx, p.TenantID, user)
	return u.ID, err
}

func (s *Server) listKeys(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.APIKeys, error) {
	owner, err := s.keyOwner(ctx, p, r.URL.Query().Get("userId"))
	if err != nil {
		return api.APIKeys{}, err
	}
	keys, err := s.store.ListKeys(ctx, p.TenantID, owner)
	return api.APIKeys{APIKeys: keys}, err
}

func (s *Server) createKey(ctx context.Context, _ *http.Request, p identity.Principal, in api.CreateAPIKey) (api.NewAPIKey, error) {
	owner, err := s.keyOwner(ctx, p, in.UserID)
	if err != nil {
		return api.NewAPIKey{}, err
	}
	return s.store.CreateKey(ctx, p.Actor(), p.TenantID, owner, in.Name, in.ExpiresAt)
}

func (s *Server) revokeKey(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	owner := p.UserID
	if p.IsAdmin() {
		owner = ""
	}
	return none{}, s.store.RevokeKey(ctx, p.Actor(), p.TenantID, r.PathValue("id"), owner)
}
