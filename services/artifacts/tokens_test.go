package artifacts

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/svc"
)

// testKeys stand for the gateway's and streammgr's keys.
var testKeys = bustoken.Generate()

// tokenFor is the token the real caller of op sends with req: streammgr's
// dispatch token for the operations that act for a run, bound to what req
// asks for, else the gateway's caller token for req's caller.
func tokenFor(t testing.TB, op string, req any) string {
	t.Helper()
	c := req.(interface{ Who() events.Caller }).Who()
	claims := bustoken.Claims{TenantID: c.TenantID, UserID: c.UserID, UserName: c.UserName, Role: c.Role}
	if _, ok := dispatched[op]; !ok {
		return sign(t, bustoken.Caller, claims)
	}
	switch r := req.(type) {
	case events.AccountResolve:
		claims.Engine, claims.AccountID = string(r.Engine), r.AccountID
	case events.ContentRequest:
		claims.Engine, claims.ProjectID = string(r.Engine), r.ProjectID
	case events.ExpandRequest:
		claims.Engine, claims.ProjectID = string(r.Engine), r.ProjectID
	case events.MCPServerRef:
		claims.ProjectID = r.ProjectID
	}
	claims.RunID = uuid.NewString()
	return sign(t, bustoken.Dispatch, claims)
}

func sign(t testing.TB, kind bustoken.Kind, c bustoken.Claims) string {
	t.Helper()
	return bustokentest.Sign(t, testKeys, kind, c)
}

// callWith sends req to op with tok, whatever the body says.
func (e *env) callWith(tok, op string, req, resp any) error {
	subject, _ := events.ServiceSubject(events.ArtifactsService, op)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if tok != "" {
		ctx = svc.WithToken(ctx, tok)
	}
	return svc.Call(ctx, e.nc, subject, req, resp)
}

// A credential goes only to the holder of a dispatch token of its tenant,
// engine and account: every forgery a bus identity allowed to call
// accounts.resolve (the worker's) could try is refused, and none of them
// reaches the store.
func TestResolveRefusesForgedCallers(t *testing.T) {
	e := start(t)
	a, b := newCaller(), newCaller()
	var p events.Provider
	e.must(events.OpProvidersPut, events.ProviderPut{Caller: a, Provider: events.Provider{Engine: events.EngineCodex, Slug: "openai",
		Name: "OpenAI", APIURL: "https://llm.example/v1"}}, &p)
	var acc events.Account
	cred := "sk-secret-of-a"
	e.must(events.OpAccountsPut, events.AccountPut{Caller: a, Account: events.Account{ProviderID: p.ID, Name: "main"}, Credential: &cred}, &acc)
	ask := events.AccountResolve{Caller: events.Caller{TenantID: a.TenantID}, Engine: events.EngineCodex, AccountID: acc.ID}

	// The run's own token gets the credential.
	var got events.ResolvedAccount
	own := sign(t, bustoken.Dispatch, bustoken.Claims{TenantID: a.TenantID, RunID: "r1", Engine: "codex", AccountID: acc.ID})
	if err := e.callWith(own, events.OpAccountsResolve, ask, &got); err != nil || got.Credential != "sk-secret-of-a" {
		t.Fatalf("resolve with the run's dispatch token = %+v, %v", got, err)
	}

	other := bustoken.Generate()
	otherSigner, _ := other.DispatchSigner()
	forged, _ := otherSigner.Sign(bustoken.Claims{TenantID: a.TenantID, Engine: "codex", AccountID: acc.ID})
	ds, _ := testKeys.DispatchSigner()
	expired, _ := ds.SignAt(bustoken.Claims{TenantID: a.TenantID, Engine: "codex", AccountID: acc.ID},
		time.Now().Add(-bustoken.DispatchTTL-bustoken.Skew-time.Second))
	asCallerKey, _ := bustoken.NewSigner(bustoken.Dispatch, testKeys.CallerKey, time.Minute)
	wrongKey, _ := asCallerKey.Sign(bustoken.Claims{TenantID: a.TenantID, Engine: "codex", AccountID: acc.ID})

	tests := []struct {
		name string
		tok  string
		give events.AccountResolve
		want string
	}{
		{"no token, the body naming A", "", ask, "no token"},
		{"signed by another key", forged, ask, "bad signature"},
		{"a dispatch token signed with the caller key", wrongKey, ask, "bad signature"},
		{"expired", expired, ask, "expired"},
		{"B's run asking for A's account", sign(t, bustoken.Dispatch, bustoken.Claims{TenantID: b.TenantID, RunID: "rb", Engine: "codex", AccountID: acc.ID}),
			ask, "is not the token's"},
		{"A's run of another account", sign(t, bustoken.Dispatch, bustoken.Claims{TenantID: a.TenantID, RunID: "r2", Engine: "codex", AccountID: uuid.NewString()}),
			ask, "may resolve its own"},
		{"A's run of another engine", sign(t, bustoken.Dispatch, bustoken.Claims{TenantID: a.TenantID, RunID: "r3", Engine: "claude", AccountID: acc.ID}),
			ask, "may resolve its own"},
		{"B's caller token claiming A", sign(t, bustoken.Caller, bustoken.Claims{TenantID: b.TenantID}), ask, "is not the token's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got events.ResolvedAccount
			err := e.callWith(tt.tok, events.OpAccountsResolve, tt.give, &got)
			if status(err) != http.StatusUnauthorized || !strings.Contains(err.Error(), tt.want) || got.Credential != "" {
				t.Errorf("resolve = %+v, %v; want a 401 saying %q", got, err, tt.want)
			}
		})
	}
	// B's token with a body naming nobody acts as B, who has no such account.
	bRun := sign(t, bustoken.Dispatch, bustoken.Claims{TenantID: b.TenantID, RunID: "rb", Engine: "codex", AccountID: acc.ID})
	anon := events.AccountResolve{Engine: events.EngineCodex, AccountID: acc.ID}
	if err := e.callWith(bRun, events.OpAccountsResolve, anon, &got); status(err) != http.StatusNotFound {
		t.Errorf("B's run resolving A's account id = %v, want 404 (B has none)", err)
	}
}

// The user-facing operations take the gateway's caller token and act as
// its tenant; a dispatch token, or a body naming another tenant, is
// refused.
func TestCallerEndpointsActAsTheToken(t *testing.T) {
	e := start(t)
	a, b := newCaller(), newCaller()
	e.putSkill(a, "deploy", "Deploy it.")
	var skills []events.Skill
	bTok := sign(t, bustoken.Caller, bustoken.Claims{TenantID: b.TenantID, UserID: b.UserID})
	if err := e.callWith(bTok, events.OpSkillsList, events.ListRequest{Caller: a}, &skills); status(err) != http.StatusUnauthorized {
		t.Errorf("B's token listing A's skills = %v, %d skills; want 401", err, len(skills))
	}
	if err := e.callWith(bTok, events.OpSkillsList, events.ListRequest{}, &skills); err != nil || len(skills) != 0 {
		t.Errorf("B's token with no tenant in the body = %d skills, %v; want B's none", len(skills), err)
	}
	aRun := sign(t, bustoken.Dispatch, bustoken.Claims{TenantID: a.TenantID, RunID: "r1"})
	if err := e.callWith(aRun, events.OpSkillsList, events.ListRequest{}, &skills); status(err) != http.StatusUnauthorized {
		t.Errorf("a dispatch token on skills.list = %v, want 401", err)
	}
	// A run's content goes to that run's token only, never to a caller's.
	aTok := sign(t, bustoken.Caller, bustoken.Claims{TenantID: a.TenantID})
	if err := e.callWith(aTok, events.OpContent, events.ContentRequest{Engine: events.EngineScripted}, nil); status(err) != http.StatusUnauthorized {
		t.Errorf("a caller token on content = %v, want 401", err)
	}
	if err := e.callWith(aRun, events.OpContent, events.ContentRequest{Engine: events.EngineScripted}, nil); status(err) != http.StatusUnauthorized {
		t.Errorf("a run's token for content of another engine = %v, want 401", err)
	}
}

// Without the keys it needs the service does not start, and says which
// and how to make them.
func TestRunNeedsTheTokenKeys(t *testing.T) {
	err := Run(context.Background(), Config{DataDir: t.TempDir(), Tokens: testKeys.Only(bustoken.Need{CallerPubKey: true})}, Deps{})
	if err == nil || !strings.Contains(err.Error(), bustoken.EnvDispatchPubKey) || !strings.Contains(err.Error(), "clopen admin bus-keys") {
		t.Errorf("Run without the dispatch key = %v", err)
	}
}
