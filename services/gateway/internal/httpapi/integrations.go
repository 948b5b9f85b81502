package httpapi

import (
	"context"
	"net/http"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/identity"
)

// The integration routes map one to one onto internal/artifacts, which
// does the access checks.

func (s *Server) integrationRoutes(key func(tag, method, path, summary string, ep endpoint, query ...Param) Route) []Route {
	const ok = http.StatusOK
	conflict := map[int]string{http.StatusConflict: "the label is taken for the provider in the scope, or the MCP server of the " +
		"slug is another integration's (the message names it)"}
	return []Route{
		key("integrations", "GET", "/v1/integrations/providers", "The built-in catalog of integration providers: what each offers, "+
			"how it authenticates, the MCP server its accounts project", handle(s, ok, s.integrationProviders)),
		key("integrations", "GET", "/v1/integrations", "The integration accounts the caller may see (the tenant's, and its projects'); "+
			"credentials are never returned", handle(s, ok, s.listIntegrations)),
		withErrors(key("integrations", "POST", "/v1/integrations", "Connect an account (admins); its credential is sealed and write-only. "+
			"With agent-tools it projects an MCP server of its scope: it creates the server of its slug, or adopts the one there, "+
			"which disconnecting puts back", handle(s, http.StatusCreated, s.connectIntegration)), conflict),
		key("integrations", "GET", "/v1/integrations/{id}", "An integration account", handle(s, ok, s.getIntegration)),
		withErrors(key("integrations", "PATCH", "/v1/integrations/{id}", "Change an account's label, capabilities, server or credential "+
			"(admins); its projected MCP server follows", handle(s, ok, s.updateIntegration)), conflict),
		withErrors(key("integrations", "POST", "/v1/integrations/{id}/check", "Probe the MCP server an account projects as a run reaches it "+
			"and record the account's status: ok, needs_auth, needs_config or error, with the reason (admins)", handle(s, ok, s.checkIntegration)),
			map[int]string{http.StatusConflict: "the account projects no MCP server (it lacks agent-tools)",
				http.StatusServiceUnavailable: "the MCP bridge is not running"}),
		key("integrations", "DELETE", "/v1/integrations/{id}", "Disconnect an account (admins): the MCP server it created is deleted, "+
			"one it adopted is put back as it was", handle(s, http.StatusNoContent, s.disconnectIntegration)),
	}
}

func (s *Server) integrationProviders(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (api.IntegrationProviders, error) {
	ps, err := s.artifacts.IntegrationProviders(ctx, p)
	return api.IntegrationProviders{Providers: nonNil(ps)}, err
}

func (s *Server) listIntegrations(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (api.Integrations, error) {
	is, err := s.artifacts.Integrations(ctx, p)
	return api.Integrations{Integrations: nonNil(is)}, err
}

func (s *Server) connectIntegration(ctx context.Context, _ *http.Request, p identity.Principal, in api.IntegrationInput) (events.Integration, error) {
	return s.artifacts.ConnectIntegration(ctx, p, in)
}

func (s *Server) getIntegration(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Integration, error) {
	return s.artifacts.Integration(ctx, p, r.PathValue("id"))
}

func (s *Server) updateIntegration(ctx context.Context, r *http.Request, p identity.Principal, in api.IntegrationPatch) (events.Integration, error) {
	return s.artifacts.UpdateIntegration(ctx, p, r.PathValue("id"), in)
}

func (s *Server) disconnectIntegration(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	return none{}, s.artifacts.DisconnectIntegration(ctx, p, r.PathValue("id"))
}

func (s *Server) checkIntegration(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Integration, error) {
	return s.artifacts.CheckIntegration(ctx, p, r.PathValue("id"))
}
