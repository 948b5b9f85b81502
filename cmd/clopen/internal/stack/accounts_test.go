package stack

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/svc"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/engine-worker/engines"
)

// TestArtifactAccountsResolveWithinTheTenant: the worker resolves a run's
// account in the real artifacts service: the tenant's active one, a named
// one, never another tenant's nor another engine's.
func TestArtifactAccountsResolveWithinTheTenant(t *testing.T) {
	h := start(t, Config{Dir: t.TempDir()})
	ctx := context.Background()
	a, b := uuid.NewString(), uuid.NewString()
	id := h.engineAccount(a, events.EngineClaudeCode)
	accounts := worker.ArtifactAccounts(h.nc)
	// Each resolve goes with the dispatch token of a run of that tenant,
	// engine and account, as a worker's does.
	run := func(tenant string, typ events.EngineType, account string) context.Context {
		return svc.WithToken(ctx, bustokentest.Sign(t, h.st.Keys, bustoken.Dispatch,
			bustoken.Claims{TenantID: tenant, RunID: uuid.NewString(), Engine: string(typ), AccountID: account}))
	}
	for _, named := range []string{"", id} {
		acc, err := accounts.Resolve(run(a, events.EngineClaudeCode, named), a, events.EngineClaudeCode, named)
		if err != nil || acc.AccountID != id || acc.Credential != "sk-test" {
			t.Errorf("resolve %q for its tenant: %+v, %v", named, acc, err)
		}
	}
	for _, tc := range []struct {
		tenant, id string
		typ        events.EngineType
	}{{b, id, events.EngineClaudeCode}, {b, "", events.EngineClaudeCode}, {a, id, events.EngineCodex}} {
		if acc, err := accounts.Resolve(run(tc.tenant, tc.typ, tc.id), tc.tenant, tc.typ, tc.id); !errors.Is(err, engines.ErrNoAccount) || acc.Credential != "" {
			t.Errorf("resolve %s's account %q for %s: %+v, %v; want ErrNoAccount", tc.tenant, tc.id, tc.typ, acc, err)
		}
	}
}
