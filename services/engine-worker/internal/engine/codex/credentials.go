package codex

import (
	"cmp"
	"context"

	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// DefaultBaseURL is OpenAI's API, where turns go without a base URL.
const DefaultBaseURL = "https://api.openai.com/v1"

// Credential is what one app-server authenticates with: an API key for the
// Responses API at BaseURL. Codex reaches it through a custom model
// provider (OPENAI_BASE_URL is ignored by the CLI, and the built-in
// provider tries WebSockets first).
type Credential struct {
	APIKey  string
	BaseURL string // "" means DefaultBaseURL
}

// fingerprint identifies the credential without revealing it, so a warm
// app-server started with other credentials is never reused.
func (c Credential) fingerprint() string { return engine.Fingerprint(c.APIKey, c.BaseURL) }

// Credentials gives each process its credentials (see engine.Credentials).
type Credentials = engine.Credentials[Credential]

// PlaceholderKey is the API key used when only a base URL is configured.
const PlaceholderKey = engine.PlaceholderKey

// EnvCredentials answers from environment variables: CODEX_API_KEY or
// OPENAI_API_KEY, and OPENAI_BASE_URL, with CLOPEN_LLM_BASE_URL (or
// BaseURL) overriding the address for every engine. It serves every tenant
// and account alike. ChatGPT sign-in (auth.json) is not offered yet.
type EnvCredentials struct {
	Getenv func(string) string
	// BaseURL, when set, wins over CLOPEN_LLM_BASE_URL and OPENAI_BASE_URL.
	BaseURL string
}

// Credential implements Credentials.
func (e EnvCredentials) Credential(_ context.Context, _, _ string) (Credential, error) {
	get := engine.Getenv(e.Getenv)
	c := Credential{APIKey: cmp.Or(get("CODEX_API_KEY"), get("OPENAI_API_KEY")), BaseURL: get("OPENAI_BASE_URL")}
	if override := engine.LLMBaseURL(e.BaseURL, get); override != "" {
		c.BaseURL, c.APIKey = override, cmp.Or(c.APIKey, PlaceholderKey)
	}
	if c.APIKey == "" {
		return Credential{}, engine.NoAccount("Codex has no account: set OPENAI_API_KEY (or CODEX_API_KEY) for the worker, or CLOPEN_LLM_BASE_URL to use a local model server")
	}
	return c, nil
}

// route is the credential an app-server of chat confined by sb is given
// (see engine.Sandboxing.Route): the model proxy's address and the chat's
// placeholder,
// the key staying in the worker.
func route(sb *engine.Sandboxing, tenant, chat string, c Credential) (Credential, error) {
	r, err := sb.Route(tenant, chat, engine.ModelAPI{BaseURL: c.BaseURL, DefaultURL: DefaultBaseURL, Scheme: modelproxy.Bearer, Secret: c.APIKey, Engine: "Codex"})
	if err != nil || r.Meter == nil {
		return c, err
	}
	return Credential{APIKey: r.Token, BaseURL: r.BaseURL}, nil
}
