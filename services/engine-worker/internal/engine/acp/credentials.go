package acp

import (
	"cmp"
	"context"
	"strings"

	"clopen.dev/services/engine-worker/internal/engine"
)

// Credential is what an agent process authenticates with: an API key and,
// optionally, the provider's address (a gateway, or fakellm in tests and
// `clopen dev --fakellm`).
type Credential struct {
	APIKey  string
	BaseURL string
}

// fingerprint identifies the credential without revealing it, so a warm
// process started with other credentials is never reused.
func (c Credential) fingerprint() string { return engine.Fingerprint(c.APIKey, c.BaseURL) }

// Credentials gives each process its credentials (see engine.Credentials).
type Credentials = engine.Credentials[Credential]

// PlaceholderKey is the API key used when only a base URL is configured.
const PlaceholderKey = engine.PlaceholderKey

// EnvCredentials answers from the worker's environment: the profile's key
// and base-URL variables, with CLOPEN_LLM_BASE_URL (or BaseURL) overriding
// the address for every engine. It serves every tenant and account alike.
type EnvCredentials struct {
	Getenv  func(string) string
	Profile *Profile
	// BaseURL, when set, wins over every variable.
	BaseURL string
}

// Credential implements Credentials.
func (e EnvCredentials) Credential(_ context.Context, _, _ string) (Credential, error) {
	get := engine.Getenv(e.Getenv)
	var c Credential
	for _, k := range e.Profile.KeyEnv {
		if c.APIKey = get(k); c.APIKey != "" {
			break
		}
	}
	for _, k := range e.Profile.BaseURLEnv {
		if c.BaseURL = get(k); c.BaseURL != "" {
			break
		}
	}
	if o := engine.LLMBaseURL(e.BaseURL, get); o != "" {
		c.BaseURL = o
	}
	if c.APIKey == "" && c.BaseURL != "" {
		c.APIKey = cmp.Or(e.Profile.PlaceholderKey, PlaceholderKey)
	}
	if c.APIKey == "" && len(e.Profile.KeyEnv) > 0 {
		return Credential{}, engine.NoAccount(e.Profile.Name + " has no account: set " + strings.Join(e.Profile.KeyEnv, " or ") +
			" for the worker, or CLOPEN_LLM_BASE_URL to use a local model server")
	}
	return c, nil
}

// route is the credential a process of chat is given (see
// engine.Sandboxing.Route): confined, the model proxy's address and the
// chat's placeholder.
func (e *Engine) route(c Credential, chat string) (Credential, error) {
	r, err := e.cfg.Sandbox.Route(e.key.Tenant, chat, engine.ModelAPI{BaseURL: c.BaseURL, DefaultURL: e.p.DefaultBaseURL,
		Scheme: e.p.Scheme, Secret: c.APIKey, Engine: e.p.Name})
	if err != nil || r.Meter == nil {
		return c, err
	}
	return Credential{APIKey: r.Token, BaseURL: r.BaseURL}, nil
}
