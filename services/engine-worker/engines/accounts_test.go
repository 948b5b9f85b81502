package engines

import (
	"context"
	"errors"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// tenantAccounts is the artifacts service's answer, by (tenant, engine):
// the accounts by id, the first being the active one.
type tenantAccounts map[string][]events.ResolvedAccount

func (t tenantAccounts) Resolve(_ context.Context, tenant string, typ events.EngineType, id string) (events.ResolvedAccount, error) {
	if tenant == "down" {
		return events.ResolvedAccount{}, errors.New("artifacts: no responders")
	}
	for i, a := range t[tenant+"/"+string(typ)] {
		if a.AccountID == id || (id == "" && i == 0) {
			return a, nil
		}
	}
	return events.ResolvedAccount{}, ErrNoAccount
}

func TestRunsUseTheirTenantsAccount(t *testing.T) {
	ctx := context.Background()
	accounts := tenantAccounts{
		"t1/claude-code": {
			{AccountID: "a1", Name: "work", Credential: "sk-ant-api-1", APIURL: "https://proxy.example"},
			{AccountID: "a2", Name: "sub", Credential: "sk-ant-oat01-xyz"},
			{AccountID: "a3", Name: "empty"},
		},
		"t1/codex":  {{AccountID: "c1", Credential: "sk-openai", APIURL: "https://oai.example/v1"}},
		"t1/pi":     {{AccountID: "p1", Credential: "sk-or", Options: map[string]string{"api": pi.APIOpenAICompletions}}},
		"t1/gemini": {{AccountID: "g1", Credential: "AIza-tenant"}},
	}
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-operator"}
	setup := Setup{Accounts: accounts, Getenv: func(k string) string { return env[k] }, OperatorCredentials: true}
	claudeFor := func(s Setup, tenant, id string) (claude.Credential, error) {
		return claudeAccounts{s}.Credential(ctx, tenant, id)
	}
	tests := []struct {
		name, tenant, id string
		want             claude.Credential
		kind             events.ErrorKind // an error of this kind instead
	}{
		{"active account", "t1", "", claude.Credential{APIKey: "sk-ant-api-1", BaseURL: "https://proxy.example"}, ""},
		{"named account, an OAuth token", "t1", "a2", claude.Credential{OAuthToken: "sk-ant-oat01-xyz"}, ""},
		{"account without a credential", "t1", "a3", claude.Credential{}, events.KindNeedsAccount},
		{"another tenant's account", "t2", "a1", claude.Credential{}, events.KindNeedsAccount},
		{"no account: the worker's own, lent", "t2", "", claude.Credential{APIKey: "sk-operator"}, ""},
		{"artifacts down", "down", "", claude.Credential{}, events.KindInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claudeFor(setup, tt.tenant, tt.id)
			if tt.kind != "" {
				if err == nil || engine.KindOf(err) != tt.kind {
					t.Fatalf("err = %v (kind %s), want kind %s", err, engine.KindOf(err), tt.kind)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}

	// By default the operator's key serves no tenant.
	only := setup
	only.OperatorCredentials = false
	if _, err := claudeFor(only, "t2", ""); engine.KindOf(err) != events.KindNeedsAccount {
		t.Errorf("operator credentials not lent, tenant without an account: err = %v, want needs-account", err)
	}
	if got, err := claudeFor(only, "t1", ""); err != nil || got.APIKey != "sk-ant-api-1" {
		t.Errorf("operator credentials not lent, tenant with an account: %+v, %v", got, err)
	}
	if fromEnv := SetupFromEnv(t.TempDir(), func(k string) string { return env[k] }, nil); fromEnv.OperatorCredentials {
		t.Errorf("a worker configured from its environment lends its own credentials without %s=1", EnvOperatorCredentials)
	}

	// The mock LLM override wins over every provider address; keys stay the tenant's.
	dev := setup
	dev.LLMBaseURL = "http://127.0.0.1:9"
	if got, _ := claudeFor(dev, "t1", ""); got.BaseURL != dev.LLMBaseURL || got.APIKey != "sk-ant-api-1" {
		t.Errorf("with an LLM override: %+v", got)
	}
	if got, err := (codexAccounts{setup}).Credential(ctx, "t1", ""); err != nil || got != (codex.Credential{APIKey: "sk-openai", BaseURL: "https://oai.example/v1"}) {
		t.Errorf("codex: %+v, %v", got, err)
	}
	if got, err := (acpAccounts{setup, &acp.Gemini}).Credential(ctx, "t1", ""); err != nil || got != (acp.Credential{APIKey: "AIza-tenant"}) {
		t.Errorf("gemini: %+v, %v", got, err)
	}
	if _, err := (acpAccounts{setup, &acp.Qwen}).Credential(ctx, "t1", "g1"); engine.KindOf(err) != events.KindNeedsAccount {
		t.Errorf("qwen with gemini's account: %v, want needs-account", err)
	}
	if got, err := (piAccounts{setup}).Credential(ctx, "t1", "p1"); err != nil || got != (pi.Credential{API: pi.APIOpenAICompletions, APIKey: "sk-or"}) {
		t.Errorf("pi: %+v, %v", got, err)
	}
}

func TestReadinessWithTenantAccounts(t *testing.T) {
	row, ok := Lookup(events.EngineClaudeCode)
	if !ok {
		t.Fatal("no claude-code row")
	}
	// No operator credentials: an engine is still ready when tenants can
	// bring accounts, and needs an account when they cannot.
	ctx := context.Background()
	installed := Status{Engine: row.Type, Installed: row.Version, Required: row.Version}
	setup := Setup{} // reads no environment: the worker has no credentials
	if st := row.withAccount(ctx, setup, installed); st.State != NeedsAccount {
		t.Errorf("without tenant accounts: %s, want %s", st.State, NeedsAccount)
	}
	setup.Accounts = tenantAccounts{}
	if st := row.withAccount(ctx, setup, installed); st.State != Ready {
		t.Errorf("with tenant accounts: %s (%s), want ready", st.State, st.Message)
	}
}
