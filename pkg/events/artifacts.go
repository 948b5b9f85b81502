package events

import "time"

// This file holds the request and reply bodies of the artifacts service,
// svc.artifacts.<op>. Every request embeds the Caller; artifacts scopes every
// read and write by Caller.TenantID. The types are plain so that a REST route
// is a thin mapping: path and query parameters fill the named fields, the JSON
// body fills the rest.

// Who returns the caller; every request that embeds Caller has it, so a
// service can check the tenant of any request in one place.
func (c Caller) Who() Caller { return c }

// SetWho replaces the caller: a service sets it from the verified token of
// the request, whatever the body said.
func (c *Caller) SetWho(w Caller) { *c = w }

// ArtifactsService is the micro service name of the artifacts service.
const ArtifactsService = "artifacts"

// Artifacts endpoints, under svc.artifacts.<op>.
const (
	OpSkillsList      = "skills.list"
	OpSkillsGet       = "skills.get"
	OpSkillsPut       = "skills.put"
	OpSkillsDelete    = "skills.delete"
	OpSkillsAvailable = "skills.available"
	OpCommandsImport  = "commands.import"

	OpSubagentsList   = "subagents.list"
	OpSubagentsGet    = "subagents.get"
	OpSubagentsPut    = "subagents.put"
	OpSubagentsDelete = "subagents.delete"

	OpInstructionsGet = "instructions.get"
	OpInstructionsPut = "instructions.put"

	OpPermissionsGet     = "permissions.get"
	OpPermissionsPut     = "permissions.put"
	OpPermissionsResolve = "permissions.resolve"

	OpProfilesList      = "profiles.list"
	OpProfilesGet       = "profiles.get"
	OpProfilesPut       = "profiles.put"
	OpProfilesDelete    = "profiles.delete"
	OpProfileDefaultGet = "profiles.default.get"
	OpProfileDefaultSet = "profiles.default.set"

	// OpProjectForget deletes every artifact row scoped to a project (its
	// instructions, permissions and default profile) when the project is
	// deleted.
	OpProjectForget = "projects.forget"

	OpProvidersList    = "providers.list"
	OpProvidersPut     = "providers.put"
	OpProvidersDelete  = "providers.delete"
	OpAccountsList     = "accounts.list"
	OpAccountsPut      = "accounts.put"
	OpAccountsDelete   = "accounts.delete"
	OpAccountsActivate = "accounts.activate"
	// OpAccountsResolve returns an account's unsealed credential. It is for
	// engine workers only: the gateway never routes it.
	OpAccountsResolve = "accounts.resolve"

	// A git project's repository credential (a token, or user:password),
	// sealed like the accounts'. The gateway puts and deletes it;
	// OpSourceCredentialResolve, which returns it unsealed, is for engine
	// workers only.
	OpSourceCredentialPut     = "sources.credential.put"
	OpSourceCredentialDelete  = "sources.credential.delete"
	OpSourceCredentialResolve = "sources.credential.resolve"

	// OpPlan is retired: artifacts answers OpContent, and the worker
	// renders the plan through its engine's layout.
	OpPlan     = "plan"
	OpExpand   = "expand"
	OpDetect   = "detect"
	OpAdopt    = "adopt"
	OpRevision = "revision"
)

// Artifact types.
const (
	ArtifactSkill       = "skill"
	ArtifactSubagent    = "subagent"
	ArtifactInstruction = "instruction"
	ArtifactPermission  = "permission"
	ArtifactMCP         = "mcp"
	ArtifactCommand     = "command" // legacy: imported into skills, stripped from engine dirs
)

// Scopes of instructions and permission sets.
const (
	ScopeGlobal  = "global"
	ScopeProject = "project"
	ScopeProfile = "profile"
)

// Skill triggers: auto skills are advertised to the agent; slash skills are
// invoked by the user as /slug.
const (
	SkillTriggerAuto  = "auto"
	SkillTriggerSlash = "slash"
)

// Skill is one skill: SKILL.md's frontmatter fields and its body. Extra holds
// frontmatter keys Clopen does not know, verbatim, in document order.
type Skill struct {
	Slug          string            `json:"slug"`
	Name          string            `json:"name"`
	Description   string            `json:"description"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	AllowedTools  string            `json:"allowedTools,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Triggers      []string          `json:"triggers"`
	ArgumentHint  string            `json:"argumentHint,omitempty"`
	Uses          []string          `json:"uses,omitempty"`
	Body          string            `json:"body"`
	Enabled       bool              `json:"enabled"`
	Source        string            `json:"source,omitempty"` // custom | imported | command | adopted
	UpdatedAt     time.Time         `json:"updatedAt"`
}

// SkillPut creates or replaces a skill. Document, when set, is a whole
// SKILL.md and wins over the structured fields (import); otherwise the
// fields are written and unknown frontmatter keys of the existing document
// are kept. Enabled nil keeps the current state (new skills are enabled).
type SkillPut struct {
	Caller
	Skill    Skill  `json:"skill"`
	Document string `json:"document,omitempty"`
	Enabled  *bool  `json:"enabled,omitempty"`
}

// ArtifactRef names one skill, subagent or profile by slug or id.
type ArtifactRef struct {
	Caller
	Slug string `json:"slug"`
}

// ListRequest lists a tenant's artifacts of one kind.
type ListRequest struct {
	Caller
}

// SkillsAvailable asks which skills a user may invoke with /slug in a
// project under a profile: the picker of the chat input.
type SkillsAvailable struct {
	Caller
	ProjectID string `json:"projectId,omitempty"`
	ProfileID string `json:"profileId,omitempty"`
}

// AvailableSkill is one entry of the slash picker.
type AvailableSkill struct {
	Slug         string `json:"slug"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint,omitempty"`
}

// LegacyCommand is a command of an older Clopen (commands/<slug>.md), to be
// imported as a slash skill.
type LegacyCommand struct {
	Slug         string    `json:"slug"`
	Name         string    `json:"name,omitempty"`
	Description  string    `json:"description,omitempty"`
	ArgumentHint string    `json:"argumentHint,omitempty"`
	Body         string    `json:"body"`
	Enabled      bool      `json:"enabled"`
	CreatedAt    time.Time `json:"createdAt"`
}

// CommandsImport imports legacy commands as slash skills. It is idempotent:
// a command imported before maps to the same skill again.
type CommandsImport struct {
	Caller
	Commands []LegacyCommand `json:"commands"`
}

// CommandsImported maps each command slug to the skill slug it became.
type CommandsImported struct {
	Slugs    map[string]string `json:"slugs"`
	Warnings []string          `json:"warnings,omitempty"`
}

// Subagent is one subagent: a markdown prompt with per-engine model and tool
// overrides.
type Subagent struct {
	Slug          string              `json:"slug"`
	Name          string              `json:"name"`
	Description   string              `json:"description"`
	Body          string              `json:"body"`
	Model         string              `json:"model,omitempty"`
	Tools         []string            `json:"tools,omitempty"`
	ModelByEngine map[string]string   `json:"modelByEngine,omitempty"`
	ToolsByEngine map[string][]string `json:"toolsByEngine,omitempty"`
	Enabled       bool                `json:"enabled"`
	UpdatedAt     time.Time           `json:"updatedAt"`
}

// SubagentPut creates or replaces a subagent; Enabled nil keeps the state.
type SubagentPut struct {
	Caller
	Subagent Subagent `json:"subagent"`
	Enabled  *bool    `json:"enabled,omitempty"`
}

// Instructions are free text every agent of a scope is given.
type Instructions struct {
	Scope     string    `json:"scope"` // global | project
	ProjectID string    `json:"projectId,omitempty"`
	Content   string    `json:"content"`
	Enabled   bool      `json:"enabled"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// InstructionsRef names the instructions of a scope.
type InstructionsRef struct {
	Caller
	Scope     string `json:"scope"`
	ProjectID string `json:"projectId,omitempty"`
}

// InstructionsPut saves the instructions of a scope; empty content deletes.
type InstructionsPut struct {
	Caller
	Instructions Instructions `json:"instructions"`
}

// PermissionRules are tool name patterns: an exact canonical name or a
// prefix ending in one *. Deny wins; a non-empty allow list admits only what
// it matches.
type PermissionRules struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// PermissionSet is the rules of one layer.
type PermissionSet struct {
	Scope     string `json:"scope"` // global | project | profile
	ProjectID string `json:"projectId,omitempty"`
	ProfileID string `json:"profileId,omitempty"`
	PermissionRules
}

// PermissionsRef names one layer.
type PermissionsRef struct {
	Caller
	Scope     string `json:"scope"`
	ProjectID string `json:"projectId,omitempty"`
	ProfileID string `json:"profileId,omitempty"`
}

// PermissionsPut saves one layer; empty allow and deny delete it.
type PermissionsPut struct {
	Caller
	Set PermissionSet `json:"set"`
}

// PermissionsResolve asks for the merged rules a run in a project under a
// profile gets.
type PermissionsResolve struct {
	Caller
	ProjectID string `json:"projectId,omitempty"`
	ProfileID string `json:"profileId,omitempty"`
}

// Profile is a named bundle of skills, subagents and MCP servers.
type Profile struct {
	ID          string        `json:"id"`
	Slug        string        `json:"slug"`
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	Items       []ProfileItem `json:"items"`
	UpdatedAt   time.Time     `json:"updatedAt"`
}

// ProfileItem is one artifact a profile references by slug. A profile
// that names any item of a type gives its runs only the items of that type
// it names: with mcp items, only those external MCP servers.
type ProfileItem struct {
	Type string `json:"type" doc:"skill, subagent or mcp (an external MCP server of the tenant or the run's project); a profile naming any item of a type gives its runs only the items of that type it names"`
	Ref  string `json:"ref" doc:"the artifact's slug"`
}

// ProfilePut creates (ID empty) or replaces a profile with its items.
type ProfilePut struct {
	Caller
	Profile Profile `json:"profile"`
}

// ProfileRef names a profile by id.
type ProfileRef struct {
	Caller
	ID string `json:"id"`
}

// ProjectDefault gets or sets a project's default profile; ProfileID empty
// clears it.
type ProjectDefault struct {
	Caller
	ProjectID string `json:"projectId"`
	ProfileID string `json:"profileId,omitempty"`
}

// ProjectRef names a project of the caller's tenant.
type ProjectRef struct {
	Caller
	ProjectID string `json:"projectId"`
}

// SourceCredentialPut stores the credential of a project's repository.
type SourceCredentialPut struct {
	Caller
	ProjectID  string `json:"projectId"`
	Credential string `json:"credential"`
}

// SourceCredential is a project's unsealed repository credential, empty
// when it has none.
type SourceCredential struct {
	Credential string `json:"credential,omitempty"`
}

// Provider is where an engine's accounts sign in (anthropic for
// claude-code, one per OpenAI-compatible endpoint for opencode...).
type Provider struct {
	ID        string            `json:"id"`
	Engine    EngineType        `json:"engine"`
	Slug      string            `json:"slug"`
	Name      string            `json:"name"`
	APIURL    string            `json:"apiUrl,omitempty"`
	Options   map[string]string `json:"options,omitempty"`
	Enabled   bool              `json:"enabled"`
	ActiveID  string            `json:"activeAccountId,omitempty"`
	Accounts  int               `json:"accounts"`
	CreatedAt time.Time         `json:"createdAt"`
}

// ProviderPut creates (ID empty) or updates a provider.
type ProviderPut struct {
	Caller
	Provider Provider `json:"provider"`
}

// RefByID names a provider or account by id.
type RefByID struct {
	Caller
	ID string `json:"id"`
}

// ProviderAccounts lists a provider's accounts; a provider the tenant does
// not have is not found.
type ProviderAccounts struct {
	Caller
	ProviderID string `json:"providerId"`
}

// Account is an engine account. Its credential is write-only: replies say
// only whether one is stored and the fingerprint of the key sealing it.
type Account struct {
	ID             string    `json:"id"`
	ProviderID     string    `json:"providerId"`
	Name           string    `json:"name"`
	Active         bool      `json:"active"`
	HasCredential  bool      `json:"hasCredential"`
	KeyFingerprint string    `json:"keyFingerprint,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// AccountPut creates (ID empty; Account.ProviderID names its provider) or
// updates an account (ID alone names it). Credential nil keeps the stored
// one; an empty string clears it.
type AccountPut struct {
	Caller
	Account    Account `json:"account"`
	Credential *string `json:"credential,omitempty"`
}

// AccountResolve asks for the credential of an engine's account; AccountID
// empty means the active account of the engine's first enabled provider.
type AccountResolve struct {
	Caller
	Engine    EngineType `json:"engine"`
	AccountID string     `json:"accountId,omitempty"`
}

// ResolvedAccount carries an unsealed credential to an engine worker.
type ResolvedAccount struct {
	AccountID  string `json:"accountId"`
	ProviderID string `json:"providerId"`
	Provider   string `json:"provider"` // the provider's slug
	Name       string `json:"name"`
	Credential string `json:"credential"`
	// APIURL and Options are the provider's: where the engine should send
	// its model calls ("" for the engine's own default) and engine-specific
	// settings (pi's "api", for one).
	APIURL  string            `json:"apiUrl,omitempty"`
	Options map[string]string `json:"options,omitempty"`
}

// PlanRequest asked for the render plan of a run (OpPlan, retired; see
// ContentRequest).
type PlanRequest struct {
	Caller
	Engine    EngineType `json:"engine"`
	ProjectID string     `json:"projectId,omitempty"`
	ProfileID string     `json:"profileId,omitempty"`
}

// ConfigDirToken stands, in a plan's contents, preamble and in expanded
// prompts, for the absolute path of the run's engine config dir; the worker
// replaces it when it applies the plan. Plans and prompts stay
// worker-independent, so a run re-dispatched to another worker gets the same
// configuration.
const ConfigDirToken = "${CLOPEN_CONFIG_DIR}"

// RenderPlan is what a worker materialises into an engine's isolated config
// dir before a run, in order: prunes, then files, then the legacy cleanup.
// plan.Render places a run's Content through the engine's layout into one.
// Paths are relative to the config dir and never leave it.
type RenderPlan struct {
	Engine   EngineType `json:"engine"`
	Revision int64      `json:"revision"`
	// MemoryFile is the engine's global memory file (CLAUDE.md, AGENTS.md...).
	MemoryFile string      `json:"memoryFile"`
	Files      []PlanFile  `json:"files"`
	Prune      []PlanPrune `json:"prune"`
	// LegacyCommandDirs are the engine's old command dirs: emptied of
	// Clopen's entries when they exist, and the COMMANDS block is stripped.
	LegacyCommandDirs []string `json:"legacyCommandDirs,omitempty"`
	// PromptPreamble goes before the prompt of every turn, as its own first
	// text block (engines cannot express a per-session profile on disk).
	PromptPreamble string          `json:"promptPreamble,omitempty"`
	Permissions    PermissionRules `json:"permissions"`
	MCPServers     []PlanMCPServer `json:"mcpServers"`
}

// File ownership in a plan.
const (
	OwnWholeFile   = "whole-file"    // the file is Clopen's: written if changed
	OwnMarkerBlock = "marker-region" // a marker block inside a shared file; empty content removes it
	OwnManagedKeys = "managed-keys"  // top-level keys of a JSON object file
)

// PlanFile is one file or managed region to write.
type PlanFile struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Mode      uint32 `json:"mode"`
	Ownership string `json:"ownership"`
	Region    string `json:"region,omitempty"` // marker id for OwnMarkerBlock
}

// PlanPrune keeps a directory's entries in line with the plan. In an
// exclusive directory every entry not in Keep is removed; in a shared one
// only the Managed entries not in Keep. Dot-files are never touched.
type PlanPrune struct {
	Dir       string   `json:"dir"`
	Exclusive bool     `json:"exclusive"`
	Keep      []string `json:"keep"`
	Managed   []string `json:"managed,omitempty"`
}

// PlanMCPServer is an MCP server the run's engine is configured with (filled
// by the mcp-bridge integration).
type PlanMCPServer struct {
	Name    string            `json:"name"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// ExpandRequest expands a /slug invocation in the first text block of an
// engine prompt.
type ExpandRequest struct {
	Caller
	ProjectID string     `json:"projectId,omitempty"`
	ProfileID string     `json:"profileId,omitempty"`
	Engine    EngineType `json:"engine,omitempty"`
	Prompt    Blocks     `json:"prompt"`
}

// ExpandReply is the engine prompt after expansion; ExpandedSkill names the
// skill invoked, empty when the prompt was not an invocation.
type ExpandReply struct {
	Prompt        Blocks `json:"prompt"`
	ExpandedSkill string `json:"expandedSkill,omitempty"`
}

// DetectRequest lists an engine's artifacts of a type: Clopen's own and
// what the engine's real directories hold that could be adopted.
type DetectRequest struct {
	Caller
	Type   string     `json:"type"` // skill | subagent
	Engine EngineType `json:"engine"`
}

// DetectedArtifact is one entry a detect found.
type DetectedArtifact struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Path        string `json:"path"`
	Managed     bool   `json:"managed"`
	Adoptable   bool   `json:"adoptable"`
}

// AdoptRequest links an artifact found by detect into Clopen's store.
type AdoptRequest struct {
	Caller
	Type   string     `json:"type"`
	Engine EngineType `json:"engine"`
	Path   string     `json:"path"`
	Slug   string     `json:"slug,omitempty"` // default: the entry's own name
}

// RevisionReply is a tenant's current artifact revision.
type RevisionReply struct {
	Revision int64 `json:"revision"`
}
