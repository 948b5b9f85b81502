package pi

import (
	"cmp"
	"context"

	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// The model APIs a pi account can use.
const (
	// APIAnthropic is pi's built-in Anthropic provider (its catalog, with
	// prices), pointed at BaseURL when one is set.
	APIAnthropic = "anthropic-messages"
	// APIOpenAICompletions is a provider of Clopen's own speaking OpenAI
	// Chat Completions at BaseURL; pi knows no prices for it.
	APIOpenAICompletions = "openai-completions"
)

// Credential is what one pi process authenticates with.
type Credential struct {
	API     string // APIAnthropic (default) or APIOpenAICompletions
	APIKey  string
	BaseURL string // "" means the provider's own address
}

// fingerprint identifies the credential without revealing it, so a warm
// process started with other credentials is never reused.
func (c Credential) fingerprint() string { return engine.Fingerprint(c.API, c.APIKey, c.BaseURL) }

// provider is the pi provider the credential's models are under.
func (c Credential) provider() string {
	if c.API == APIOpenAICompletions {
		return "clopen"
	}
	return "anthropic"
}

// Credentials gives each process its credentials (see engine.Credentials).
type Credentials = engine.Credentials[Credential]

// PlaceholderKey is the API key used when only a base URL is configured.
const PlaceholderKey = engine.PlaceholderKey

// EnvCredentials answers from environment variables: CLOPEN_PI_API picks
// the API (anthropic-messages unless it says openai-completions), whose
// key is ANTHROPIC_API_KEY or OPENAI_API_KEY and whose address is
// ANTHROPIC_BASE_URL or OPENAI_BASE_URL, with CLOPEN_LLM_BASE_URL (or
// BaseURL) overriding the address for every engine. It serves every tenant
// and account alike; pi's OAuth sign-ins are not offered yet.
type EnvCredentials struct {
	Getenv func(string) string
	// BaseURL, when set, wins over CLOPEN_LLM_BASE_URL and the API's own.
	BaseURL string
}

// Credential implements Credentials.
func (e EnvCredentials) Credential(_ context.Context, _, _ string) (Credential, error) {
	get := engine.Getenv(e.Getenv)
	c := Credential{API: APIAnthropic, APIKey: get("ANTHROPIC_API_KEY"), BaseURL: get("ANTHROPIC_BASE_URL")}
	if get("CLOPEN_PI_API") == APIOpenAICompletions {
		c = Credential{API: APIOpenAICompletions, APIKey: get("OPENAI_API_KEY"), BaseURL: get("OPENAI_BASE_URL")}
	}
	if override := engine.LLMBaseURL(e.BaseURL, get); override != "" {
		c.BaseURL, c.APIKey = override, cmp.Or(c.APIKey, PlaceholderKey)
	}
	if c.APIKey == "" {
		return Credential{}, engine.NoAccount("pi has no account: set ANTHROPIC_API_KEY (or CLOPEN_PI_API=openai-completions with OPENAI_API_KEY) for the worker, or CLOPEN_LLM_BASE_URL to use a local model server")
	}
	return c, nil
}

// The providers' own addresses, where a credential with no base URL goes.
const (
	anthropicBaseURL = "https://api.anthropic.com"
	openAIBaseURL    = "https://api.openai.com/v1"
)

// route is the credential a pi of chat confined by sb is given (see
// engine.Sandboxing.Route): the model proxy's address and the chat's
// placeholder,
// the key staying in the worker.
func route(sb *engine.Sandboxing, tenant, chat string, c Credential) (Credential, error) {
	api := engine.ModelAPI{BaseURL: c.BaseURL, DefaultURL: anthropicBaseURL, Scheme: modelproxy.AnthropicKey, Secret: c.APIKey, Engine: "pi"}
	if c.API == APIOpenAICompletions {
		api.DefaultURL, api.Scheme = openAIBaseURL, modelproxy.Bearer
	}
	r, err := sb.Route(tenant, chat, api)
	if err != nil || r.Meter == nil {
		return c, err
	}
	return Credential{API: c.API, APIKey: r.Token, BaseURL: r.BaseURL}, nil
}
