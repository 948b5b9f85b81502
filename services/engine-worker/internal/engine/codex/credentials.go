package codex

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
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
func (c Credential) fingerprint() string {
	sum := sha256.Sum256([]byte(c.APIKey + "\x00" + c.BaseURL))
	return hex.EncodeToString(sum[:8])
}

// Credentials is the seam through which the worker gives an app-server its
// credentials, asked once per process start for the instance's tenant and
// account. Implementations are safe for concurrent use; an error of kind
// events.KindNeedsAccount says nothing is configured.
type Credentials interface {
	Credential(ctx context.Context, tenant, account string) (Credential, error)
}

// PlaceholderKey is the API key used when only a base URL is configured
// (fakellm accepts any key; the provider needs one).
const PlaceholderKey = "sk-clopen-no-key"

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
	get := e.Getenv
	if get == nil {
		get = func(string) string { return "" }
	}
	c := Credential{APIKey: cmp.Or(get("CODEX_API_KEY"), get("OPENAI_API_KEY")), BaseURL: get("OPENAI_BASE_URL")}
	if override := cmp.Or(e.BaseURL, get("CLOPEN_LLM_BASE_URL")); override != "" {
		c.BaseURL = override
		if c.APIKey == "" {
			c.APIKey = PlaceholderKey
		}
	}
	if c.APIKey == "" {
		return Credential{}, &engine.Error{Kind: events.KindNeedsAccount,
			Msg: "Codex has no account: set OPENAI_API_KEY (or CODEX_API_KEY) for the worker, or CLOPEN_LLM_BASE_URL to use a local model server"}
	}
	return c, nil
}
