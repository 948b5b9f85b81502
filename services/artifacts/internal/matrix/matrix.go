// Package matrix is the capability matrix: for every artifact type, engine
// and scope, where the artifact goes (relative to the engine's isolated
// config dir, or to the repository for project scope), in which shape, who
// owns the bytes, and whether the engine reads it natively. Rendering walks
// these rows and dispatches on Shape, so supporting a new engine or artifact
// is a new row, not new code.
//
// The config dir is the root the worker points the engine at: claude-code
// CLAUDE_CONFIG_DIR, codex CODEX_HOME, opencode XDG_CONFIG_HOME (hence the
// opencode/ prefix), pi PI_CODING_AGENT_DIR, and HOME for the engines that
// only read from their home (qwen .qwen/, copilot .copilot/, gemini
// .gemini/). Engines with no config-dir convention of their own (cline,
// cursor, acp, scripted) get AGENTS.md at the root.
package matrix

import (
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
)

// Shape is how an artifact is laid out.
type Shape string

// The shapes.
const (
	FolderMD       Shape = "folder-md"       // <dir>/<slug>/SKILL.md (+ the skill's other files)
	SingleMD       Shape = "single-md"       // <dir>/<slug>.md
	PreambleRegion Shape = "preamble-region" // a marker block in the memory file
	JSONKeys       Shape = "json"            // managed top-level keys of a JSON settings file
	Prompt         Shape = "prompt"          // the run's prompt preamble, nothing on disk
)

// Dialect picks how a single-md subagent document is written.
type Dialect string

// The dialects.
const (
	DialectClaude   Dialect = "claude"   // name, description, tools (comma list), model
	DialectOpenCode Dialect = "opencode" // description, mode: subagent, model; tools dropped
)

// SkillSet picks which skills a skill row materialises.
type SkillSet string

// The skill sets.
const (
	// Advertised are the active skills with the auto trigger: what the agent
	// may pick by itself. Slash-only skills never appear there.
	Advertised SkillSet = "advertised"
	// Invocable are all active skills, slash-only ones included: the canonical
	// store that slash expansion and `uses` blocks point into.
	Invocable SkillSet = "invocable"
)

// Row is one cell of the matrix.
type Row struct {
	Type   string            // events.Artifact*
	Engine events.EngineType // AnyEngine for rows every engine shares
	Scope  string            // events.ScopeGlobal | events.ScopeProject
	// Path is relative to the config dir (global) or the repo (project); for
	// PreambleRegion it is the memory file.
	Path      string
	Shape     Shape
	Ownership string // events.Own*
	// Exclusive dirs hold only Clopen's entries and are pruned of the rest;
	// shared dirs lose only Clopen-managed entries no longer active.
	Exclusive bool
	// Native is true when the engine reads the artifact where it is put;
	// false for Clopen's synthetic stand-ins (marker blocks, the store).
	Native  bool
	Region  string   // marker id for PreambleRegion
	Dialect Dialect  // for SingleMD subagents
	Set     SkillSet // for skill rows
	Key     string   // for JSONKeys: the managed top-level key
	// Real is where the engine keeps this artifact in a real user's home
	// (detect & link), relative to that home; empty when none.
	Real string
}

// AnyEngine marks a row every engine shares.
const AnyEngine events.EngineType = "*"

// Store is the config-dir folder of Clopen's own copies.
const Store = ".clopen"

// StoreSkillPath is the SKILL.md of slug in the canonical store, as the
// agent sees it (the worker resolves the token).
func StoreSkillPath(slug string) string {
	return events.ConfigDirToken + "/" + Store + "/skills/" + slug + "/SKILL.md"
}

// rows is THE table.
var rows = []Row{
	// The canonical store: every invocable skill, for every engine.
	{Type: events.ArtifactSkill, Engine: AnyEngine, Scope: events.ScopeGlobal, Path: Store + "/skills", Shape: FolderMD, Ownership: events.OwnWholeFile, Exclusive: true, Set: Invocable},

	// Skills.
	{Type: events.ArtifactSkill, Engine: events.EngineClaudeCode, Scope: events.ScopeGlobal, Path: "skills", Shape: FolderMD, Ownership: events.OwnWholeFile, Exclusive: true, Native: true, Set: Advertised, Real: ".claude/skills"},
	{Type: events.ArtifactSkill, Engine: events.EngineClaudeCode, Scope: events.ScopeProject, Path: ".claude/skills", Shape: FolderMD, Ownership: events.OwnWholeFile, Native: true, Set: Advertised},
	{Type: events.ArtifactSkill, Engine: events.EngineQwen, Scope: events.ScopeGlobal, Path: ".qwen/skills", Shape: FolderMD, Ownership: events.OwnWholeFile, Native: true, Set: Advertised, Real: ".qwen/skills"},
	{Type: events.ArtifactSkill, Engine: events.EngineCopilot, Scope: events.ScopeGlobal, Path: ".copilot/skills", Shape: FolderMD, Ownership: events.OwnWholeFile, Native: true, Set: Advertised, Real: ".copilot/skills"},
	{Type: events.ArtifactSkill, Engine: events.EnginePi, Scope: events.ScopeGlobal, Path: "skills", Shape: FolderMD, Ownership: events.OwnWholeFile, Exclusive: true, Native: true, Set: Advertised, Real: ".pi/agent/skills"},
	{Type: events.ArtifactSkill, Engine: events.EnginePi, Scope: events.ScopeProject, Path: ".pi/skills", Shape: FolderMD, Ownership: events.OwnWholeFile, Native: true, Set: Advertised},
	{Type: events.ArtifactSkill, Engine: events.EngineCodex, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSkills, Set: Advertised},
	{Type: events.ArtifactSkill, Engine: events.EngineOpenCode, Scope: events.ScopeGlobal, Path: "opencode/AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSkills, Set: Advertised},
	{Type: events.ArtifactSkill, Engine: events.EngineCline, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSkills, Set: Advertised},
	{Type: events.ArtifactSkill, Engine: events.EngineCursor, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSkills, Set: Advertised},
	{Type: events.ArtifactSkill, Engine: events.EngineGemini, Scope: events.ScopeGlobal, Path: ".gemini/GEMINI.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSkills, Set: Advertised},
	{Type: events.ArtifactSkill, Engine: events.EngineACP, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSkills, Set: Advertised},
	{Type: events.ArtifactSkill, Engine: events.EngineScripted, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSkills, Set: Advertised},

	// Legacy commands: only ever emptied (stripLegacyCommandArtifacts).
	{Type: events.ArtifactCommand, Engine: events.EngineClaudeCode, Scope: events.ScopeGlobal, Path: "commands", Shape: SingleMD, Ownership: events.OwnWholeFile, Exclusive: true, Native: true, Real: ".claude/commands"},
	{Type: events.ArtifactCommand, Engine: events.EngineOpenCode, Scope: events.ScopeGlobal, Path: "opencode/command", Shape: SingleMD, Ownership: events.OwnWholeFile, Exclusive: true, Native: true, Real: ".config/opencode/command"},
	{Type: events.ArtifactCommand, Engine: events.EngineCodex, Scope: events.ScopeGlobal, Path: "prompts", Shape: SingleMD, Ownership: events.OwnWholeFile, Exclusive: true, Native: true, Real: ".codex/prompts"},
	{Type: events.ArtifactCommand, Engine: events.EnginePi, Scope: events.ScopeGlobal, Path: "prompts", Shape: SingleMD, Ownership: events.OwnWholeFile, Exclusive: true, Native: true, Real: ".pi/agent/prompts"},

	// Subagents. Engines that cannot delegate (codex, copilot, qwen, gemini,
	// acp) have no row: they are told nothing about subagents.
	{Type: events.ArtifactSubagent, Engine: events.EngineClaudeCode, Scope: events.ScopeGlobal, Path: "agents", Shape: SingleMD, Ownership: events.OwnWholeFile, Exclusive: true, Native: true, Dialect: DialectClaude, Real: ".claude/agents"},
	{Type: events.ArtifactSubagent, Engine: events.EngineClaudeCode, Scope: events.ScopeProject, Path: ".claude/agents", Shape: SingleMD, Ownership: events.OwnWholeFile, Native: true, Dialect: DialectClaude},
	{Type: events.ArtifactSubagent, Engine: events.EngineOpenCode, Scope: events.ScopeGlobal, Path: "opencode/agent", Shape: SingleMD, Ownership: events.OwnWholeFile, Exclusive: true, Native: true, Dialect: DialectOpenCode, Real: ".config/opencode/agent"},
	{Type: events.ArtifactSubagent, Engine: events.EngineOpenCode, Scope: events.ScopeProject, Path: ".opencode/agent", Shape: SingleMD, Ownership: events.OwnWholeFile, Native: true, Dialect: DialectOpenCode},
	{Type: events.ArtifactSubagent, Engine: events.EnginePi, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSubagents},
	{Type: events.ArtifactSubagent, Engine: events.EngineCline, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSubagents},
	{Type: events.ArtifactSubagent, Engine: events.EngineCursor, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSubagents},
	{Type: events.ArtifactSubagent, Engine: events.EngineScripted, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionSubagents},

	// Instructions: the global block in every engine's memory file (engines
	// that do not read it also get it in the prompt, see Traits).
	{Type: events.ArtifactInstruction, Engine: events.EngineClaudeCode, Scope: events.ScopeGlobal, Path: "CLAUDE.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Native: true, Region: plan.RegionInstructions, Real: ".claude/CLAUDE.md"},
	{Type: events.ArtifactInstruction, Engine: events.EngineCodex, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Native: true, Region: plan.RegionInstructions, Real: ".codex/AGENTS.md"},
	{Type: events.ArtifactInstruction, Engine: events.EngineCopilot, Scope: events.ScopeGlobal, Path: ".copilot/AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Native: true, Region: plan.RegionInstructions, Real: ".copilot/AGENTS.md"},
	{Type: events.ArtifactInstruction, Engine: events.EngineOpenCode, Scope: events.ScopeGlobal, Path: "opencode/AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Native: true, Region: plan.RegionInstructions, Real: ".config/opencode/AGENTS.md"},
	{Type: events.ArtifactInstruction, Engine: events.EngineQwen, Scope: events.ScopeGlobal, Path: ".qwen/QWEN.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Native: true, Region: plan.RegionInstructions, Real: ".qwen/QWEN.md"},
	{Type: events.ArtifactInstruction, Engine: events.EnginePi, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Native: true, Region: plan.RegionInstructions, Real: ".pi/agent/AGENTS.md"},
	{Type: events.ArtifactInstruction, Engine: events.EngineCursor, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionInstructions},
	{Type: events.ArtifactInstruction, Engine: events.EngineCline, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionInstructions},
	{Type: events.ArtifactInstruction, Engine: events.EngineGemini, Scope: events.ScopeGlobal, Path: ".gemini/GEMINI.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Native: true, Region: plan.RegionInstructions, Real: ".gemini/GEMINI.md"},
	{Type: events.ArtifactInstruction, Engine: events.EngineACP, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Region: plan.RegionInstructions},
	{Type: events.ArtifactInstruction, Engine: events.EngineScripted, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion, Ownership: events.OwnMarkerBlock, Native: true, Region: plan.RegionInstructions},
	// Project instructions reach every engine through the prompt; Clopen
	// never writes them into the repository at run start.
	{Type: events.ArtifactInstruction, Engine: AnyEngine, Scope: events.ScopeProject, Shape: Prompt},

	// Permissions: Claude's settings mirror; every engine is enforced at run
	// time by the worker on each tool call whatever the table says.
	{Type: events.ArtifactPermission, Engine: events.EngineClaudeCode, Scope: events.ScopeGlobal, Path: "settings.json", Shape: JSONKeys, Ownership: events.OwnManagedKeys, Native: true, Key: "permissions"},
}

// Rows returns the rows for type, engine and scope, shared rows first, in
// table order. The slice is a copy.
func Rows(typ string, engine events.EngineType, scope string) []Row {
	var out []Row
	for _, r := range rows {
		if r.Type == typ && r.Scope == scope && (r.Engine == engine || r.Engine == AnyEngine) {
			out = append(out, r)
		}
	}
	return out
}

// All returns the whole table. The slice is a copy.
func All() []Row { return append([]Row(nil), rows...) }

// Synthetic returns the row of type for engine that Clopen delivers as a
// marker block (PreambleRegion), if any.
func Synthetic(typ string, engine events.EngineType) (Row, bool) {
	for _, r := range Rows(typ, engine, events.ScopeGlobal) {
		if r.Shape == PreambleRegion {
			return r, true
		}
	}
	return Row{}, false
}
