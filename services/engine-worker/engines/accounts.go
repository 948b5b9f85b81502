package engines

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// Accounts looks up a tenant's engine account with its credential (the
// artifacts service's accounts.resolve): the named one, or with id "" the
// tenant's active one. It returns ErrNoAccount when there is none.
type Accounts interface {
	Resolve(ctx context.Context, tenant string, typ events.EngineType, id string) (events.ResolvedAccount, error)
}

// ErrNoAccount: the tenant has no such account (or, asked for none in
// particular, no active account) for the engine.
var ErrNoAccount = errors.New("no such engine account")

// account finds the tenant account a process of (tenant, id) runs with. ok
// is false when the tenant has no account for typ and named none: the
// worker's own credentials (its environment) serve it then if the setup
// lends them, else the run needs an account. A named account that is not the
// tenant's is an error, never a fallback.
func (s Setup) account(ctx context.Context, tenant string, typ events.EngineType, id string) (events.ResolvedAccount, bool, error) {
	if s.Accounts == nil || tenant == "" {
		return events.ResolvedAccount{}, false, nil
	}
	acc, err := s.Accounts.Resolve(ctx, tenant, typ, id)
	switch {
	case err == nil && acc.Credential == "":
		return acc, false, &engine.Error{Kind: events.KindNeedsAccount,
			Msg: fmt.Sprintf("the %s account %q has no credential: set one on the account", typ, acc.Name)}
	case err == nil:
		return acc, true, nil
	case errors.Is(err, ErrNoAccount) && id != "":
		return acc, false, &engine.Error{Kind: events.KindNeedsAccount,
			Msg: fmt.Sprintf("account %s is not one of this tenant's %s accounts", id, typ)}
	case errors.Is(err, ErrNoAccount) && !s.OperatorCredentials:
		return acc, false, &engine.Error{Kind: events.KindNeedsAccount,
			Msg: fmt.Sprintf("this tenant has no %s account: add a provider and an account for %s (POST /v1/providers, then /v1/providers/{id}/accounts)", typ, typ)}
	case errors.Is(err, ErrNoAccount):
		return acc, false, nil
	}
	return acc, false, fmt.Errorf("look up the %s account: %w", typ, err)
}

// llmOverride is the address that replaces every provider's
// (`clopen dev --fakellm`, tests): Setup.LLMBaseURL, else CLOPEN_LLM_BASE_URL.
func (s Setup) llmOverride() string {
	return cmp.Or(s.LLMBaseURL, s.getenv("CLOPEN_LLM_BASE_URL"))
}

// credential is what a process of (tenant, id) runs with: made from the
// tenant's account by fromAccount, or the worker's own (env) when the tenant
// has none.
func credential[C any](ctx context.Context, s Setup, typ events.EngineType, tenant, id string,
	env func() (C, error), fromAccount func(events.ResolvedAccount) C) (C, error) {
	acc, ok, err := s.account(ctx, tenant, typ, id)
	switch {
	case err != nil:
		var zero C
		return zero, err
	case !ok:
		return env()
	}
	return fromAccount(acc), nil
}

// claudeAccounts gives Claude Code processes the tenant's account, else the
// worker's environment. A `claude setup-token` token goes in as an OAuth
// token, anything else as an API key.
type claudeAccounts struct{ s Setup }

func (c claudeAccounts) Credential(ctx context.Context, tenant, id string) (claude.Credential, error) {
	env := func() (claude.Credential, error) { return c.s.claudeCredentials().Credential(ctx, tenant, id) }
	return credential(ctx, c.s, events.EngineClaudeCode, tenant, id, env, func(acc events.ResolvedAccount) claude.Credential {
		cred := claude.Credential{APIKey: acc.Credential}
		if strings.HasPrefix(acc.Credential, "sk-ant-oat") {
			cred = claude.Credential{OAuthToken: acc.Credential}
		}
		cred.BaseURL = cmp.Or(c.s.llmOverride(), acc.APIURL)
		return cred
	})
}

// codexAccounts gives Codex app-servers the tenant's account, else the
// worker's environment.
type codexAccounts struct{ s Setup }

func (c codexAccounts) Credential(ctx context.Context, tenant, id string) (codex.Credential, error) {
	env := func() (codex.Credential, error) { return c.s.codexCredentials().Credential(ctx, tenant, id) }
	return credential(ctx, c.s, events.EngineCodex, tenant, id, env, func(acc events.ResolvedAccount) codex.Credential {
		return codex.Credential{APIKey: acc.Credential, BaseURL: cmp.Or(c.s.llmOverride(), acc.APIURL)}
	})
}

// piAccounts gives pi processes the tenant's account, else the worker's
// environment. The provider's option "api" picks pi's model API
// (anthropic-messages unless it says openai-completions).
type piAccounts struct{ s Setup }

func (c piAccounts) Credential(ctx context.Context, tenant, id string) (pi.Credential, error) {
	env := func() (pi.Credential, error) { return c.s.piCredentials().Credential(ctx, tenant, id) }
	return credential(ctx, c.s, events.EnginePi, tenant, id, env, func(acc events.ResolvedAccount) pi.Credential {
		api := pi.APIAnthropic
		if acc.Options["api"] == pi.APIOpenAICompletions {
			api = pi.APIOpenAICompletions
		}
		return pi.Credential{API: api, APIKey: acc.Credential, BaseURL: cmp.Or(c.s.llmOverride(), acc.APIURL)}
	})
}

// acpAccounts gives ACP agent processes the tenant's account for the
// profile's engine, else the worker's environment.
type acpAccounts struct {
	s Setup
	p *acp.Profile
}

func (c acpAccounts) Credential(ctx context.Context, tenant, id string) (acp.Credential, error) {
	env := func() (acp.Credential, error) { return c.s.acpCredentials(c.p).Credential(ctx, tenant, id) }
	return credential(ctx, c.s, c.p.Type, tenant, id, env, func(acc events.ResolvedAccount) acp.Credential {
		return acp.Credential{APIKey: acc.Credential, BaseURL: cmp.Or(c.s.llmOverride(), acc.APIURL)}
	})
}
