package events

// OpContent is svc.artifacts.content: the artifacts of a run, engine-neutral
// (ContentRequest → Content). Artifacts decides what a run is configured
// with; the engine's adapter declares where its engine reads each kind
// (a pkg/events/plan Layout), and the worker places the content through that
// layout (plan.Render) and applies the result. It replaces OpPlan.
const OpContent = "content"

// ContentRequest asks for the artifacts of a run. Engine picks the
// subagents' per-engine model and tool overrides; nothing else of the answer
// depends on it.
type ContentRequest struct {
	Caller
	Engine    EngineType `json:"engine"`
	ProjectID string     `json:"projectId,omitempty"`
	ProfileID string     `json:"profileId,omitempty"`
}

// Content is what one run is configured with, resolved (profile, enabled
// flags, layered permissions) and rendered as text, but placed nowhere:
// every engine gets the same Content for the same request and revision, up
// to the per-engine overrides of its subagents. Texts that name files of the
// config dir write it as ConfigDirToken.
type Content struct {
	Revision int64 `json:"revision"`
	// Skills are the active skills, by slug: the canonical store holds them
	// all (slash-only ones too); engines are told only of the Advertised.
	Skills []ContentSkill `json:"skills"`
	// ManagedSkills is every skill slug of the tenant, active or not: what
	// Clopen may remove from a directory it shares with the engine.
	ManagedSkills []string `json:"managedSkills"`
	// Subagents are the active subagents, by slug.
	Subagents []ContentSubagent `json:"subagents"`
	// ManagedSubagents is every subagent slug of the tenant.
	ManagedSubagents []string `json:"managedSubagents"`
	// SkillsIndex advertises the Advertised skills and where their SKILL.md
	// is ("" for none); SubagentsIndex lists the subagents an engine that
	// can delegate may hand work to.
	SkillsIndex    string `json:"skillsIndex,omitempty"`
	SubagentsIndex string `json:"subagentsIndex,omitempty"`
	// Instructions is the text of the global instructions, "" when they are
	// disabled; InstructionsSection is the same as a prompt section, for
	// engines that do not read their memory file.
	Instructions        string `json:"instructions,omitempty"`
	InstructionsSection string `json:"instructionsSection,omitempty"`
	// ProjectSection is the project's instructions as a prompt section
	// ("" for none): every engine gets them in the prompt, never on disk.
	ProjectSection string          `json:"projectSection,omitempty"`
	Permissions    PermissionRules `json:"permissions"`
	MCPServers     []PlanMCPServer `json:"mcpServers"`
}

// ContentSkill is an active skill with the files of its folder (SKILL.md
// included), by path relative to the folder.
type ContentSkill struct {
	Slug string `json:"slug"`
	// Advertised skills have the auto trigger: the agent may pick them by
	// itself. The others are invoked by the user as /slug.
	Advertised bool              `json:"advertised"`
	Files      map[string]string `json:"files"`
}

// ContentSubagent is an active subagent written as a document in every
// dialect an engine may read (plan.Dialects), keyed by dialect.
type ContentSubagent struct {
	Slug      string            `json:"slug"`
	Documents map[string]string `json:"documents"`
}
