package engine

import (
	"cmp"
	"fmt"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// ModelAPI is the model API an agent process is configured for: what its
// credential says, and how the engine's provider takes the key.
type ModelAPI struct {
	// BaseURL is the credential's address; empty is DefaultURL.
	BaseURL string
	// DefaultURL is the provider's own base URL; empty when the engine's
	// login cannot go through the model proxy (see docs/ENGINES.md).
	DefaultURL string
	Scheme     modelproxy.Scheme
	// Secret is the real credential.
	Secret string
	// Engine names the engine in errors.
	Engine string
}

// ModelRoute is what the agent process is given in place of ModelAPI.
type ModelRoute struct {
	// BaseURL and Token replace the credential's address and key in the
	// agent's environment and settings.
	BaseURL, Token string
	// Meter counts the usage the provider reported to the chat's
	// placeholder; nil when the process talks to the provider itself.
	Meter *modelproxy.Meter
}

// Route returns the address and key an agent process of tenant's chat
// (Request.SessionID; empty for work of no chat) is given for api.
// Confined with a model proxy (Sandboxing.Proxies), they are the proxy's: a
// loopback URL inside the sandbox and the chat's own placeholder token, so
// the proxy counts what the chat's runs spend (modelproxy.Pool.Begin), and
// the real credential stays in the worker. Unconfined, or with no secret to
// keep (a local model server the agent reaches by its own endpoint), they
// are api's own. A secret whose engine has no proxied form is refused
// rather than put into the sandbox.
func (s *Sandboxing) Route(tenant, chat string, api ModelAPI) (ModelRoute, error) {
	direct := ModelRoute{BaseURL: api.BaseURL, Token: api.Secret}
	if s == nil || s.Proxies == nil || api.Secret == "" {
		return direct, nil
	}
	upstream := cmp.Or(api.BaseURL, api.DefaultURL)
	if upstream == "" || api.Scheme == "" {
		return ModelRoute{}, &Error{Kind: events.KindNeedsAccount,
			Msg: fmt.Sprintf("%s cannot run confined with this login: it does not go through the model proxy, and the credential is never given to the agent; configure an API key and base URL for it", api.Engine)}
	}
	r, err := s.Proxies.Route(tenant, chat, modelproxy.Upstream{BaseURL: upstream, Scheme: api.Scheme, Secret: api.Secret})
	if err != nil {
		return ModelRoute{}, err
	}
	return ModelRoute{BaseURL: r.URL, Token: r.Token, Meter: r.Meter}, nil
}
