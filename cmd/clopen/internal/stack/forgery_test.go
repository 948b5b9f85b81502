package stack

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/svc"
)

// With the worker's identity on the bus (the one allowed to publish
// accounts.resolve), a tenant's credential cannot be had by naming the
// tenant: not without a token, not with a caller token of another tenant,
// not with a dispatch token of another tenant's run or of a key the stack
// does not trust. Only the run's own dispatch token gets it.
func TestTheWorkersIdentityCannotForgeATenant(t *testing.T) {
	h := start(t, Config{NoWorkers: true})
	a := uuid.NewString()
	acct := h.engineAccount(a, events.EngineCodex)
	nc, err := h.st.Connect(busauth.Worker, "forger")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subject, _ := events.ServiceSubject(events.ArtifactsService, events.OpAccountsResolve)
	ask := events.AccountResolve{Caller: events.Caller{TenantID: a}, Engine: events.EngineCodex, AccountID: acct}
	sign := func(kind bustoken.Kind, keys bustoken.Keys, c bustoken.Claims) string {
		return bustokentest.Sign(t, keys, kind, c)
	}
	resolve := func(tok string) (events.ResolvedAccount, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var got events.ResolvedAccount
		err := svc.Call(svc.WithToken(ctx, tok), nc, subject, ask, &got)
		return got, err
	}
	own := bustoken.Claims{TenantID: a, RunID: uuid.NewString(), Engine: string(events.EngineCodex), AccountID: acct}
	if got, err := resolve(sign(bustoken.Dispatch, h.st.Keys, own)); err != nil || got.Credential != "sk-test" {
		t.Fatalf("the run's own token: %+v, %v", got, err)
	}
	b := uuid.NewString()
	for name, tok := range map[string]string{
		"no token":                  "",
		"B's caller token":          sign(bustoken.Caller, h.st.Keys, bustoken.Claims{TenantID: b}),
		"B's run":                   sign(bustoken.Dispatch, h.st.Keys, bustoken.Claims{TenantID: b, RunID: "r", Engine: "codex", AccountID: acct}),
		"a key the stack never saw": sign(bustoken.Dispatch, bustoken.Generate(), own),
	} {
		got, err := resolve(tok)
		var apiErr *events.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized || got.Credential != "" {
			t.Errorf("%s: %+v, %v; want 401 and no credential", name, got, err)
		}
	}
}
