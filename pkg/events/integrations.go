package events

import "time"

// Integrations, under svc.artifacts.integrations.<op>: connected accounts of
// a tenant (ProjectID "") or of one of its projects at a provider of the
// built-in catalog. An account with CapabilityAgentTools projects an
// external MCP server of its scope (an MCPServerDef whose ManagedBy names
// it); disconnecting it puts back what was there.
const (
	OpIntegrationProviders = "integrations.providers"
	OpIntegrationsList     = "integrations.list"
	OpIntegrationsGet      = "integrations.get"
	OpIntegrationsPut      = "integrations.put"
	OpIntegrationsDelete   = "integrations.delete"
	// OpIntegrationsStatus records what a check of an account found
	// (IntegrationStatusSet).
	OpIntegrationsStatus = "integrations.status.set"
)

// CapabilityAgentTools gives the runs of the account's scope the provider's
// MCP server.
const CapabilityAgentTools = "agent-tools"

// IntegrationAuthAPIKey is the auth method of a provider whose account
// holds a key, sent to its MCP server in a header.
const IntegrationAuthAPIKey = "api-key"

// Statuses of an integration account.
const (
	IntegrationUnknown     = "unknown"
	IntegrationOK          = "ok"
	IntegrationNeedsAuth   = "needs_auth"
	IntegrationNeedsConfig = "needs_config"
	IntegrationError       = "error"
)

// IntegrationProvider is an entry of the catalog.
type IntegrationProvider struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Capabilities []string `json:"capabilities" doc:"what its accounts may be given: agent-tools (its MCP server in the runs of the account's scope)"`
	Auth         string   `json:"auth" doc:"api-key: the account's credential is a key the MCP server gets in a header"`
	// Server is the MCP server its accounts project; a field left empty
	// is the account's to give (a custom provider's URL and header).
	Server IntegrationServer `json:"server"`
}

// IntegrationServer is the MCP server an account projects: its default
// slug, its URL, and the header that carries the key, as HeaderPrefix
// followed by the key.
type IntegrationServer struct {
	Slug         string `json:"slug,omitempty"`
	URL          string `json:"url,omitempty"`
	HeaderName   string `json:"headerName,omitempty"`
	HeaderPrefix string `json:"headerPrefix,omitempty"`
}

// Integration is a connected account as clients see it: whether it holds
// a credential, never the credential.
type Integration struct {
	ID string `json:"id"`
	// ProjectID binds the account to one project: its server is the
	// project's; "" is the tenant's.
	ProjectID    string   `json:"projectId,omitempty"`
	Provider     string   `json:"provider"`
	Label        string   `json:"label"`
	Capabilities []string `json:"capabilities"`
	// Server is what it projects: the slug (the provider's unless given)
	// and, for a custom provider, the URL and header name.
	Server        IntegrationServer `json:"server"`
	HasCredential bool              `json:"hasCredential"`
	Status        string            `json:"status" doc:"unknown (changed since its last check, or never checked), ok, needs_auth, needs_config or error"`
	StatusReason  string            `json:"statusReason,omitempty"`
	// Projection is the MCP server row it projects, when it has agent-tools.
	Projection *IntegrationProjection `json:"projection,omitempty"`
	CreatedAt  time.Time              `json:"createdAt"`
	UpdatedAt  time.Time              `json:"updatedAt"`
}

// IntegrationProjection is the MCP server an account projects: Adopted
// when the row was there before, and is put back as it was when the
// account lets it go; otherwise the row is deleted then.
type IntegrationProjection struct {
	ServerID  string `json:"serverId"`
	ProjectID string `json:"projectId,omitempty"`
	Slug      string `json:"slug"`
	Adopted   bool   `json:"adopted"`
}

// IntegrationPut connects (Integration.ID "") or changes an account.
// Credential, when not nil, replaces the sealed one; nil keeps it.
type IntegrationPut struct {
	Caller
	Integration Integration `json:"integration"`
	Credential  *string     `json:"credential,omitempty"`
}

// IntegrationStatusSet records the status a check of account ID found, and
// why when it is not ok.
type IntegrationStatusSet struct {
	Caller
	ID     string `json:"id"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}
