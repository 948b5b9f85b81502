package api

import "clopen.dev/pkg/events"

// The bodies of the artifacts routes. Replies are the pkg/events types the
// artifacts service defines; requests are the writable fields only, so a
// client can never name a tenant, a caller or a read-only field.

// Skills lists the tenant's skills, without their bodies, by slug.
type Skills struct {
	Skills []events.Skill `json:"skills"`
}

// SkillInput creates (POST /v1/skills, Slug required) or replaces (PUT
// /v1/skills/{slug}, Slug empty or the path's) a skill. Document, when set,
// is a whole SKILL.md and wins over the fields; otherwise the fields are
// written and frontmatter keys Clopen does not know are kept. Enabled nil
// keeps the current state (a new skill is enabled).
type SkillInput struct {
	Slug          string            `json:"slug,omitempty"`
	Name          string            `json:"name,omitempty"`
	Description   string            `json:"description,omitempty"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	AllowedTools  string            `json:"allowedTools,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Triggers      []string          `json:"triggers,omitempty"` // auto | slash; default auto
	ArgumentHint  string            `json:"argumentHint,omitempty"`
	Uses          []string          `json:"uses,omitempty"`
	Body          string            `json:"body,omitempty"`
	Document      string            `json:"document,omitempty"`
	Enabled       *bool             `json:"enabled,omitempty"`
}

// AvailableSkills is the "/" picker: the skills the caller may invoke with
// /slug in a project under a profile.
type AvailableSkills struct {
	Skills []events.AvailableSkill `json:"skills"`
}

// ImportCommands imports commands of an older Clopen as slash skills,
// idempotently.
type ImportCommands struct {
	Commands []events.LegacyCommand `json:"commands"`
}

// Subagents lists the tenant's subagents.
type Subagents struct {
	Subagents []events.Subagent `json:"subagents"`
}

// SubagentInput creates (POST /v1/subagents, Slug required) or replaces
// (PUT /v1/subagents/{slug}) a subagent; Enabled nil keeps the state.
type SubagentInput struct {
	Slug          string              `json:"slug,omitempty"`
	Name          string              `json:"name,omitempty"`
	Description   string              `json:"description"`
	Body          string              `json:"body,omitempty"`
	Model         string              `json:"model,omitempty"`
	Tools         []string            `json:"tools,omitempty"`
	ModelByEngine map[string]string   `json:"modelByEngine,omitempty"`
	ToolsByEngine map[string][]string `json:"toolsByEngine,omitempty"`
	Enabled       *bool               `json:"enabled,omitempty"`
}

// InstructionsInput saves the instructions of a scope: blank content
// deletes them; Enabled nil keeps the current state (true for new ones).
type InstructionsInput struct {
	Content string `json:"content"`
	Enabled *bool  `json:"enabled,omitempty"`
}

// Profiles lists the tenant's profiles with their items.
type Profiles struct {
	Profiles []events.Profile `json:"profiles"`
}

// ProfileInput creates (POST /v1/profiles) or replaces (PUT
// /v1/profiles/{id}) a profile and its items. An empty slug is derived from
// the name.
type ProfileInput struct {
	Slug        string               `json:"slug,omitempty"`
	Name        string               `json:"name"`
	Description string               `json:"description,omitempty"`
	Items       []events.ProfileItem `json:"items,omitempty"`
}

// DefaultProfile is a project's default profile; ProfileID empty means none.
type DefaultProfile struct {
	ProjectID string `json:"projectId"`
	ProfileID string `json:"profileId"`
}

// SetDefaultProfile sets a project's default profile; "" clears it.
type SetDefaultProfile struct {
	ProfileID string `json:"profileId"`
}

// Providers lists the tenant's engine providers.
type Providers struct {
	Providers []events.Provider `json:"providers"`
}

// ProviderInput creates (POST /v1/providers) or replaces (PUT
// /v1/providers/{id}) a provider. Enabled nil keeps the state (a new
// provider is enabled).
type ProviderInput struct {
	Engine  events.EngineType `json:"engine"`
	Slug    string            `json:"slug"`
	Name    string            `json:"name"`
	APIURL  string            `json:"apiUrl,omitempty"`
	Options map[string]string `json:"options,omitempty"`
	Enabled *bool             `json:"enabled,omitempty"`
}

// Accounts lists a provider's accounts. No reply ever carries a credential.
type Accounts struct {
	Accounts []events.Account `json:"accounts"`
}

// AccountInput creates (POST /v1/providers/{id}/accounts) or changes (PUT
// /v1/accounts/{id}) an account. Credential is write-only: it is sealed at
// rest and never returned; nil keeps the stored one, "" clears it.
type AccountInput struct {
	Name       string  `json:"name"`
	Credential *string `json:"credential,omitempty"`
}

// DetectedArtifacts lists an engine's skills or subagents: Clopen's own and
// what the engine's real directories hold that could be adopted.
type DetectedArtifacts struct {
	Artifacts []events.DetectedArtifact `json:"artifacts"`
}

// AdoptInput links an entry found by detect into the tenant's store.
type AdoptInput struct {
	Type   string            `json:"type"` // skill | subagent
	Engine events.EngineType `json:"engine"`
	Path   string            `json:"path"`
	Slug   string            `json:"slug,omitempty"` // default: the entry's own name
}

// MCPServers lists the external MCP servers of the tenant or a project.
type MCPServers struct {
	MCPServers []events.MCPServerDef `json:"mcpServers"`
}

// MCPOAuthStart starts signing in to a remote MCP server that wants OAuth.
// Both fields are for an authorization server without dynamic client
// registration: a client registered there by hand with Clopen's callback as
// its redirect URI. The secret is sealed with the grant, never returned.
type MCPOAuthStart struct {
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
}

// MCPServerInput creates (POST) or replaces (PUT .../{slug}) an external
// MCP server. Env (stdio) and headers (http) are write-only: they are
// sealed, and read back as their names alone. On a replace, env or
// headers left out keep the stored ones and {} clears them.
type MCPServerInput struct {
	Slug      string              `json:"slug"`
	Name      string              `json:"name,omitempty"`
	Transport events.MCPTransport `json:"transport"`
	URL       string              `json:"url,omitempty"`
	Command   string              `json:"command,omitempty"`
	Args      []string            `json:"args,omitempty"`
	Env       map[string]string   `json:"env"`
	Headers   map[string]string   `json:"headers"`
	Exposure  events.MCPExposure  `json:"exposure"`
	Disabled  bool                `json:"disabled,omitempty"`
}
