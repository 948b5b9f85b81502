package client

import (
	"context"
	"net/http"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// IntegrationProviders returns the built-in catalog of integration
// providers.
func (c *Client) IntegrationProviders(ctx context.Context) ([]events.IntegrationProvider, error) {
	r, err := get[api.IntegrationProviders](ctx, c, "/v1/integrations/providers", nil)
	return r.Providers, err
}

// Integrations lists the integration accounts the caller may see.
func (c *Client) Integrations(ctx context.Context) ([]events.Integration, error) {
	r, err := get[api.Integrations](ctx, c, "/v1/integrations", nil)
	return r.Integrations, err
}

// Integration returns one integration account.
func (c *Client) Integration(ctx context.Context, id string) (events.Integration, error) {
	return get[events.Integration](ctx, c, p("/v1/integrations/", id), nil)
}

// ConnectIntegration connects an account (admins).
func (c *Client) ConnectIntegration(ctx context.Context, in api.IntegrationInput) (events.Integration, error) {
	return send[events.Integration](ctx, c, http.MethodPost, "/v1/integrations", in)
}

// UpdateIntegration changes an account (admins); fields left nil are kept.
func (c *Client) UpdateIntegration(ctx context.Context, id string, in api.IntegrationPatch) (events.Integration, error) {
	return send[events.Integration](ctx, c, http.MethodPatch, p("/v1/integrations/", id), in)
}

// DisconnectIntegration removes an account (admins) and lets its MCP
// server go.
func (c *Client) DisconnectIntegration(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/integrations/", id), nil, nil, nil)
}

// CheckIntegration probes the MCP server an account projects and returns
// the account with the status found (admins).
func (c *Client) CheckIntegration(ctx context.Context, id string) (events.Integration, error) {
	return send[events.Integration](ctx, c, http.MethodPost, p("/v1/integrations/", id, "/check"), nil)
}
