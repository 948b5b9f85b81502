package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

func TestEnsureDevAccount(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	keyFile := filepath.Join(t.TempDir(), "clopen", gateway.DevKeyFile)

	key, err := gateway.EnsureDevAccount(ctx, e.db, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(keyFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v; want mode 0600", st, err)
	}
	if b, _ := os.ReadFile(keyFile); strings.TrimSpace(string(b)) != key {
		t.Errorf("key file holds %q, want the returned key", b)
	}
	c := client.New(e.url, key)
	me, err := c.Me(ctx)
	if err != nil || me.User.Email != gateway.DevEmail || me.User.Role != api.RoleAdmin || me.Tenant.Slug != gateway.DevTenant {
		t.Fatalf("Me = %+v, %v", me, err)
	}
	ps, err := c.Projects(ctx)
	if err != nil || len(ps) != 1 || ps[0].Name != gateway.DevProject || ps[0].Role != api.ProjectOwner {
		t.Fatalf("Projects = %+v, %v", ps, err)
	}

	again, err := gateway.EnsureDevAccount(ctx, e.db, keyFile)
	if err != nil || again != key {
		t.Errorf("second run = %q, %v; want the same key", again, err)
	}

	// A revoked key is replaced, and nothing else is duplicated.
	keys, _ := c.APIKeys(ctx, "")
	if err := c.RevokeAPIKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	fresh, err := gateway.EnsureDevAccount(ctx, e.db, keyFile)
	if err != nil || fresh == key {
		t.Fatalf("after revoke = %q, %v; want a new key", fresh, err)
	}
	if ps, err := client.New(e.url, fresh).Projects(ctx); err != nil || len(ps) != 1 {
		t.Errorf("projects after re-mint = %+v, %v", ps, err)
	}
	tenants, _ := gateway.ListTenants(ctx, e.db)
	if len(tenants) != 1 {
		t.Errorf("tenants = %+v, want only dev", tenants)
	}
}

func TestAdminFunctions(t *testing.T) {
	db := pgtest.New(t, gateway.Schema)
	ctx := context.Background()
	if _, err := gateway.CreateTenant(ctx, db, "Bad Slug", ""); err == nil {
		t.Error("CreateTenant accepted a bad slug")
	}
	if _, err := gateway.CreateTenant(ctx, db, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.CreateTenant(ctx, db, "acme", "Acme"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate tenant: %v", err)
	}
	if _, err := gateway.CreateUser(ctx, db, "nope", api.CreateUser{Email: "a@b.c", Name: "A"}); err == nil {
		t.Error("CreateUser in an unknown tenant succeeded")
	}
	u, err := gateway.CreateUser(ctx, db, "acme", api.CreateUser{Email: "a@acme.test", Name: "A"})
	if err != nil || u.Role != api.RoleMember {
		t.Fatalf("CreateUser = %+v, %v", u, err)
	}
	k, err := gateway.CreateKey(ctx, db, "acme", "a@acme.test", "ops")
	if err != nil || k.UserID != u.ID || !strings.HasPrefix(k.Key, "clp_") {
		t.Fatalf("CreateKey = %+v, %v", k, err)
	}
	if _, err := gateway.CreateKey(ctx, db, "acme", "nobody@acme.test", ""); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("CreateKey for an unknown user: %v", err)
	}
}
