package api

import "clopen.dev/pkg/events"

// IntegrationProviders is the built-in catalog of integration providers.
type IntegrationProviders struct {
	Providers []events.IntegrationProvider `json:"providers"`
}

// Integrations lists the integration accounts the caller may see: the
// tenant's and those of the projects it may use.
type Integrations struct {
	Integrations []events.Integration `json:"integrations"`
}

// IntegrationInput connects an account (POST /v1/integrations). ProjectID
// binds it to one project ("" is the tenant's); Server.Slug names the MCP
// server it projects (default: the provider's), and a custom provider's
// account also gives Server.URL and Server.HeaderName. Credential is
// write-only: sealed at rest, sent only to the MCP server, never returned.
type IntegrationInput struct {
	ProjectID    string                   `json:"projectId,omitempty"`
	Provider     string                   `json:"provider"`
	Label        string                   `json:"label"`
	Capabilities []string                 `json:"capabilities,omitempty"`
	Server       events.IntegrationServer `json:"server,omitempty"`
	Credential   string                   `json:"credential"`
}

// IntegrationPatch changes an account (PATCH /v1/integrations/{id}): each
// field left out is kept; Server replaces the whole server when given.
// Its scope and provider do not change: connect another account instead.
type IntegrationPatch struct {
	Label        *string                   `json:"label,omitempty"`
	Capabilities *[]string                 `json:"capabilities,omitempty"`
	Server       *events.IntegrationServer `json:"server,omitempty"`
	Credential   *string                   `json:"credential,omitempty"`
}
