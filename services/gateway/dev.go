package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// The development account `clopen dev` sets up.
const (
	DevTenant     = "dev"
	DevEmail      = "dev@localhost"
	DevProject    = "default"
	DevKeyFile    = "dev-api-key" // the key file's name in the data dir
	devKeyName    = "clopen dev"
	devUserName   = "Developer"
	devTenantName = "Development"
)

// EnsureDevAccount makes sure the development account exists and returns an
// API key for it, kept in keyFile (mode 0600). The first run creates tenant
// "dev", its admin dev@localhost, project "default" owned by that user, and
// a key. Later runs return the key in keyFile while it still authenticates;
// otherwise they recreate whatever is missing and mint a new key.
func EnsureDevAccount(ctx context.Context, db *pgxpool.Pool, keyFile string) (string, error) {
	s := identity.New(db)
	if key, ok := reusableKey(ctx, s, keyFile); ok {
		return key, nil
	}
	t, err := ensureTenant(ctx, s)
	if err != nil {
		return "", err
	}
	u, err := s.UserByEmail(ctx, t.ID, DevEmail)
	if errors.Is(err, apierr.ErrNotFound) {
		u, err = s.CreateUser(ctx, audit.Operator, t.ID, api.CreateUser{Email: DevEmail, Name: devUserName, Role: api.RoleAdmin})
	}
	if err != nil {
		return "", fmt.Errorf("dev user: %w", err)
	}
	p := identity.Principal{TenantID: t.ID, UserID: u.ID, UserName: u.Name, Email: u.Email, Role: u.Role}
	if err := ensureProject(ctx, s, p); err != nil {
		return "", err
	}
	k, err := s.CreateKey(ctx, audit.Operator, t.ID, u.ID, devKeyName, nil)
	if err != nil {
		return "", fmt.Errorf("dev api key: %w", err)
	}
	if err := writeKeyFile(keyFile, k.Key); err != nil {
		return "", err
	}
	return k.Key, nil
}

// reusableKey returns the key in keyFile if it still authenticates.
func reusableKey(ctx context.Context, s *identity.Store, keyFile string) (string, bool) {
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return "", false
	}
	key := strings.TrimSpace(string(b))
	if !identity.WellFormedKey(key) {
		return "", false
	}
	_, st, err := s.LookupKey(ctx, key)
	if err != nil || st.RevokedAt != nil || (st.ExpiresAt != nil && !time.Now().Before(*st.ExpiresAt)) {
		return "", false
	}
	return key, true
}

func ensureTenant(ctx context.Context, s *identity.Store) (api.Tenant, error) {
	t, err := s.TenantBySlug(ctx, DevTenant)
	if errors.Is(err, apierr.ErrNotFound) {
		t, err = s.CreateTenant(ctx, DevTenant, devTenantName)
		if errors.Is(err, apierr.ErrConflict) { // another process won the race
			t, err = s.TenantBySlug(ctx, DevTenant)
		}
	}
	if err != nil {
		return t, fmt.Errorf("dev tenant: %w", err)
	}
	return t, nil
}

func ensureProject(ctx context.Context, s *identity.Store, p identity.Principal) error {
	projects, err := s.ListProjects(ctx, p)
	if err != nil {
		return fmt.Errorf("dev project: %w", err)
	}
	for _, pr := range projects {
		if pr.Name == DevProject {
			return nil
		}
	}
	_, err = s.CreateProject(ctx, p, api.CreateProject{Name: DevProject})
	if err != nil && !errors.Is(err, apierr.ErrConflict) {
		return fmt.Errorf("dev project: %w", err)
	}
	return nil
}

// writeKeyFile replaces keyFile atomically, readable by its owner only
// (os.CreateTemp creates files with mode 0600).
func writeKeyFile(keyFile, key string) error {
	dir := filepath.Dir(keyFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create dev key dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".dev-api-key-*")
	if err != nil {
		return fmt.Errorf("write dev key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(key + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), keyFile)
	}
	if err != nil {
		return fmt.Errorf("write dev key file: %w", err)
	}
	return nil
}
