package client

import (
	"context"
	"net/http"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// Skills lists the tenant's skills, without their bodies.
func (c *Client) Skills(ctx context.Context) ([]events.Skill, error) {
	r, err := get[api.Skills](ctx, c, "/v1/skills", nil)
	return r.Skills, err
}

// Skill returns a skill with its whole document.
func (c *Client) Skill(ctx context.Context, slug string) (events.Skill, error) {
	return get[events.Skill](ctx, c, p("/v1/skills/", slug), nil)
}

// CreateSkill creates a skill (admins).
func (c *Client) CreateSkill(ctx context.Context, in api.SkillInput) (events.Skill, error) {
	return send[events.Skill](ctx, c, http.MethodPost, "/v1/skills", in)
}

// ReplaceSkill replaces a skill (admins).
func (c *Client) ReplaceSkill(ctx context.Context, slug string, in api.SkillInput) (events.Skill, error) {
	return send[events.Skill](ctx, c, http.MethodPut, p("/v1/skills/", slug), in)
}

// DeleteSkill deletes a skill (admins).
func (c *Client) DeleteSkill(ctx context.Context, slug string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/skills/", slug), nil, nil, nil)
}

// AvailableSkills lists the "/" picker for a project ("" for none) under a
// profile ("" for the project's default).
func (c *Client) AvailableSkills(ctx context.Context, project, profile string) ([]events.AvailableSkill, error) {
	r, err := get[api.AvailableSkills](ctx, c, "/v1/available-skills", pageQuery("projectId", project, "profileId", profile))
	return r.Skills, err
}

// ImportCommands imports legacy commands as slash skills (admins).
func (c *Client) ImportCommands(ctx context.Context, cmds []events.LegacyCommand) (events.CommandsImported, error) {
	return send[events.CommandsImported](ctx, c, http.MethodPost, "/v1/skills/import-commands", api.ImportCommands{Commands: cmds})
}

// Subagents lists the tenant's subagents.
func (c *Client) Subagents(ctx context.Context) ([]events.Subagent, error) {
	r, err := get[api.Subagents](ctx, c, "/v1/subagents", nil)
	return r.Subagents, err
}

// Subagent returns a subagent.
func (c *Client) Subagent(ctx context.Context, slug string) (events.Subagent, error) {
	return get[events.Subagent](ctx, c, p("/v1/subagents/", slug), nil)
}

// CreateSubagent creates a subagent (admins).
func (c *Client) CreateSubagent(ctx context.Context, in api.SubagentInput) (events.Subagent, error) {
	return send[events.Subagent](ctx, c, http.MethodPost, "/v1/subagents", in)
}

// ReplaceSubagent replaces a subagent (admins).
func (c *Client) ReplaceSubagent(ctx context.Context, slug string, in api.SubagentInput) (events.Subagent, error) {
	return send[events.Subagent](ctx, c, http.MethodPut, p("/v1/subagents/", slug), in)
}

// DeleteSubagent deletes a subagent (admins).
func (c *Client) DeleteSubagent(ctx context.Context, slug string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/subagents/", slug), nil, nil, nil)
}

// Layer names where instructions or permissions live: the tenant's (the
// zero Layer), a project's, or (permissions only) a profile's.
type Layer struct {
	ProjectID string
	ProfileID string
}

func (l Layer) path(kind string) string {
	switch {
	case l.ProjectID != "":
		return p("/v1/projects/", l.ProjectID, "/"+kind)
	case l.ProfileID != "":
		return p("/v1/profiles/", l.ProfileID, "/"+kind)
	}
	return "/v1/" + kind
}

// Instructions returns the tenant's or a project's instructions.
func (c *Client) Instructions(ctx context.Context, l Layer) (events.Instructions, error) {
	return get[events.Instructions](ctx, c, l.path("instructions"), nil)
}

// PutInstructions saves the tenant's (admins) or a project's (owners,
// admins) instructions.
func (c *Client) PutInstructions(ctx context.Context, l Layer, in api.InstructionsInput) (events.Instructions, error) {
	return send[events.Instructions](ctx, c, http.MethodPut, l.path("instructions"), in)
}

// Permissions returns one permission layer.
func (c *Client) Permissions(ctx context.Context, l Layer) (events.PermissionSet, error) {
	return get[events.PermissionSet](ctx, c, l.path("permissions"), nil)
}

// PutPermissions saves one permission layer.
func (c *Client) PutPermissions(ctx context.Context, l Layer, rules events.PermissionRules) (events.PermissionSet, error) {
	return send[events.PermissionSet](ctx, c, http.MethodPut, l.path("permissions"), rules)
}

// EffectivePermissions returns the merged rules a run in project under
// profile ("" for the project's default) gets.
func (c *Client) EffectivePermissions(ctx context.Context, project, profile string) (events.PermissionRules, error) {
	return get[events.PermissionRules](ctx, c, p("/v1/projects/", project, "/permissions/effective"), pageQuery("profileId", profile))
}

// Profiles lists the tenant's profiles.
func (c *Client) Profiles(ctx context.Context) ([]events.Profile, error) {
	r, err := get[api.Profiles](ctx, c, "/v1/profiles", nil)
	return r.Profiles, err
}

// Profile returns a profile.
func (c *Client) Profile(ctx context.Context, id string) (events.Profile, error) {
	return get[events.Profile](ctx, c, p("/v1/profiles/", id), nil)
}

// CreateProfile creates a profile (admins).
func (c *Client) CreateProfile(ctx context.Context, in api.ProfileInput) (events.Profile, error) {
	return send[events.Profile](ctx, c, http.MethodPost, "/v1/profiles", in)
}

// ReplaceProfile replaces a profile and its items (admins).
func (c *Client) ReplaceProfile(ctx context.Context, id string, in api.ProfileInput) (events.Profile, error) {
	return send[events.Profile](ctx, c, http.MethodPut, p("/v1/profiles/", id), in)
}

// DeleteProfile deletes a profile (admins).
func (c *Client) DeleteProfile(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/profiles/", id), nil, nil, nil)
}

// DefaultProfile returns a project's default profile.
func (c *Client) DefaultProfile(ctx context.Context, project string) (api.DefaultProfile, error) {
	return get[api.DefaultProfile](ctx, c, p("/v1/projects/", project, "/default-profile"), nil)
}

// SetDefaultProfile sets (profile "" clears) a project's default profile.
func (c *Client) SetDefaultProfile(ctx context.Context, project, profile string) (api.DefaultProfile, error) {
	return send[api.DefaultProfile](ctx, c, http.MethodPut, p("/v1/projects/", project, "/default-profile"), api.SetDefaultProfile{ProfileID: profile})
}

// Providers lists the tenant's engine providers.
func (c *Client) Providers(ctx context.Context) ([]events.Provider, error) {
	r, err := get[api.Providers](ctx, c, "/v1/providers", nil)
	return r.Providers, err
}

// CreateProvider creates a provider (admins).
func (c *Client) CreateProvider(ctx context.Context, in api.ProviderInput) (events.Provider, error) {
	return send[events.Provider](ctx, c, http.MethodPost, "/v1/providers", in)
}

// ReplaceProvider replaces a provider's fields (admins).
func (c *Client) ReplaceProvider(ctx context.Context, id string, in api.ProviderInput) (events.Provider, error) {
	return send[events.Provider](ctx, c, http.MethodPut, p("/v1/providers/", id), in)
}

// DeleteProvider deletes a provider and its accounts (admins).
func (c *Client) DeleteProvider(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/providers/", id), nil, nil, nil)
}

// Accounts lists a provider's accounts, never with their credentials.
func (c *Client) Accounts(ctx context.Context, provider string) ([]events.Account, error) {
	r, err := get[api.Accounts](ctx, c, p("/v1/providers/", provider, "/accounts"), nil)
	return r.Accounts, err
}

// CreateAccount adds an account to a provider (admins).
func (c *Client) CreateAccount(ctx context.Context, provider string, in api.AccountInput) (events.Account, error) {
	return send[events.Account](ctx, c, http.MethodPost, p("/v1/providers/", provider, "/accounts"), in)
}

// ReplaceAccount renames an account and sets or clears its credential
// (admins).
func (c *Client) ReplaceAccount(ctx context.Context, id string, in api.AccountInput) (events.Account, error) {
	return send[events.Account](ctx, c, http.MethodPut, p("/v1/accounts/", id), in)
}

// DeleteAccount deletes an account (admins).
func (c *Client) DeleteAccount(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/accounts/", id), nil, nil, nil)
}

// ActivateAccount makes an account its provider's active one (admins).
func (c *Client) ActivateAccount(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, p("/v1/accounts/", id, "/activate"), nil, nil, nil)
}

// Detect lists an engine's skills or subagents (admins).
func (c *Client) Detect(ctx context.Context, typ string, engine events.EngineType) ([]events.DetectedArtifact, error) {
	r, err := get[api.DetectedArtifacts](ctx, c, "/v1/artifacts/detect", pageQuery("type", typ, "engine", string(engine)))
	return r.Artifacts, err
}

// Adopt links a detected entry into the tenant's store (admins).
func (c *Client) Adopt(ctx context.Context, in api.AdoptInput) (events.DetectedArtifact, error) {
	return send[events.DetectedArtifact](ctx, c, http.MethodPost, "/v1/artifacts/adopt", in)
}

// ArtifactRevision returns the tenant's artifact revision.
func (c *Client) ArtifactRevision(ctx context.Context) (int64, error) {
	r, err := get[events.RevisionReply](ctx, c, "/v1/artifacts/revision", nil)
	return r.Revision, err
}

// MCPServers lists the external MCP servers of the tenant or a project;
// env and headers by name only.
func (c *Client) MCPServers(ctx context.Context, l Layer) ([]events.MCPServerDef, error) {
	r, err := get[api.MCPServers](ctx, c, l.path("mcp-servers"), nil)
	return r.MCPServers, err
}

// MCPServer returns one MCP server of the tenant or a project.
func (c *Client) MCPServer(ctx context.Context, l Layer, slug string) (events.MCPServerDef, error) {
	return get[events.MCPServerDef](ctx, c, l.path("mcp-servers")+p("/", slug), nil)
}

// CreateMCPServer adds an MCP server to the tenant (admins) or a project
// (owners, admins).
func (c *Client) CreateMCPServer(ctx context.Context, l Layer, in api.MCPServerInput) (events.MCPServerDef, error) {
	return send[events.MCPServerDef](ctx, c, http.MethodPost, l.path("mcp-servers"), in)
}

// ReplaceMCPServer replaces an MCP server; env or headers left nil are kept.
func (c *Client) ReplaceMCPServer(ctx context.Context, l Layer, slug string, in api.MCPServerInput) (events.MCPServerDef, error) {
	return send[events.MCPServerDef](ctx, c, http.MethodPut, l.path("mcp-servers")+p("/", slug), in)
}

// DeleteMCPServer deletes an MCP server.
func (c *Client) DeleteMCPServer(ctx context.Context, l Layer, slug string) error {
	return c.do(ctx, http.MethodDelete, l.path("mcp-servers")+p("/", slug), nil, nil, nil)
}

// StartMCPOAuth starts signing in to a remote MCP server that wants OAuth
// and returns the URL to open in the user's browser.
func (c *Client) StartMCPOAuth(ctx context.Context, l Layer, slug string, in api.MCPOAuthStart) (events.MCPOAuthStarted, error) {
	return send[events.MCPOAuthStarted](ctx, c, http.MethodPost, l.path("mcp-servers")+p("/", slug, "/oauth"), in)
}

// ProbeMCPServer asks the bridge to check an MCP server as a run reaches it.
func (c *Client) ProbeMCPServer(ctx context.Context, l Layer, slug string) (events.MCPServerStatus, error) {
	return send[events.MCPServerStatus](ctx, c, http.MethodPost, l.path("mcp-servers")+p("/", slug, "/probe"), nil)
}
