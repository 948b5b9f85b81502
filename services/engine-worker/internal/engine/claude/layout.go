package claude

import (
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
)

// Layout is where Claude Code reads Clopen's artifacts, relative to its
// CLAUDE_CONFIG_DIR: native skills, subagents and settings, and the
// instructions block of CLAUDE.md.
func Layout() plan.Layout {
	return plan.Layout{Engine: events.EngineClaudeCode, MemoryFile: "CLAUDE.md", ReadsMemoryFile: true,
		Why: "a fresh CLI per run over a pruned dir: the disk expresses the profile",
		Rows: []plan.Row{
			{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: "skills", Shape: plan.FolderMD, Exclusive: true, Native: true},
			{Type: events.ArtifactSkill, Scope: events.ScopeProject, Path: ".claude/skills", Shape: plan.FolderMD, Native: true},
			{Type: events.ArtifactCommand, Scope: events.ScopeGlobal, Path: "commands", Shape: plan.SingleMD, Exclusive: true, Native: true},
			{Type: events.ArtifactSubagent, Scope: events.ScopeGlobal, Path: "agents", Shape: plan.SingleMD, Exclusive: true, Native: true, Dialect: plan.DialectClaude},
			{Type: events.ArtifactSubagent, Scope: events.ScopeProject, Path: ".claude/agents", Shape: plan.SingleMD, Native: true, Dialect: plan.DialectClaude},
			{Type: events.ArtifactInstruction, Scope: events.ScopeGlobal, Path: "CLAUDE.md", Shape: plan.PreambleRegion, Native: true},
			// The settings mirror of the run's permissions; every engine is
			// enforced at run time by the worker on each tool call anyway.
			{Type: events.ArtifactPermission, Scope: events.ScopeGlobal, Path: "settings.json", Shape: plan.JSONKeys, Native: true, Key: "permissions"},
		}}
}
