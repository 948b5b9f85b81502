package claude

import (
	"context"

	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// Credential is what one run authenticates with. Exactly one of APIKey and
// OAuthToken is normally set; BaseURL, when set, replaces the provider's
// address (a proxy, a gateway, or fakellm in tests and `clopen dev --fakellm`).
type Credential struct {
	APIKey     string // becomes ANTHROPIC_API_KEY
	OAuthToken string // becomes CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`)
	BaseURL    string // becomes ANTHROPIC_BASE_URL
}

// fingerprint identifies the credential without revealing it, so a warm
// process started with other credentials is never reused.
func (c Credential) fingerprint() string {
	return engine.Fingerprint(c.APIKey, c.OAuthToken, c.BaseURL)
}

// Credentials gives each process its credentials (see engine.Credentials).
type Credentials = engine.Credentials[Credential]

// PlaceholderKey is the API key used when only a base URL is configured.
const PlaceholderKey = engine.PlaceholderKey

// EnvCredentials answers from environment variables: ANTHROPIC_API_KEY,
// CLAUDE_CODE_OAUTH_TOKEN and ANTHROPIC_BASE_URL, with CLOPEN_LLM_BASE_URL
// (or BaseURL) overriding the address for every engine. It serves every
// tenant and account alike.
type EnvCredentials struct {
	Getenv func(string) string
	// BaseURL, when set, wins over CLOPEN_LLM_BASE_URL and ANTHROPIC_BASE_URL.
	BaseURL string
}

// Credential implements Credentials.
func (e EnvCredentials) Credential(_ context.Context, _, _ string) (Credential, error) {
	get := engine.Getenv(e.Getenv)
	c := Credential{APIKey: get("ANTHROPIC_API_KEY"), OAuthToken: get("CLAUDE_CODE_OAUTH_TOKEN"), BaseURL: get("ANTHROPIC_BASE_URL")}
	if override := engine.LLMBaseURL(e.BaseURL, get); override != "" {
		c.BaseURL = override
		if c.APIKey == "" && c.OAuthToken == "" {
			c.APIKey = PlaceholderKey
		}
	}
	if c.APIKey == "" && c.OAuthToken == "" {
		return Credential{}, engine.NoAccount("Claude Code has no account: set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`) for the worker, or CLOPEN_LLM_BASE_URL to use a local model server")
	}
	return c, nil
}

// DefaultBaseURL is Anthropic's API, where a credential with no base URL
// goes.
const DefaultBaseURL = "https://api.anthropic.com"

// route is the credential a process of chat is given (see
// engine.Sandboxing.Route): confined, the model proxy's address and the
// chat's placeholder, in the API-key
// form whichever login the proxy holds.
func (e *Engine) route(c Credential, chat string) (Credential, error) {
	api := engine.ModelAPI{BaseURL: c.BaseURL, DefaultURL: DefaultBaseURL, Scheme: modelproxy.AnthropicKey, Secret: c.APIKey, Engine: "Claude Code"}
	if c.APIKey == "" {
		api.Scheme, api.Secret = modelproxy.AnthropicOAuth, c.OAuthToken
	}
	r, err := e.cfg.Sandbox.Route(e.key.Tenant, chat, api)
	if err != nil || r.Meter == nil {
		return c, err
	}
	return Credential{APIKey: r.Token, BaseURL: r.BaseURL}, nil
}
