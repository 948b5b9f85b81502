package codex

import (
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
)

// Layout is where Codex reads Clopen's artifacts, relative to its
// CODEX_HOME. Codex cannot delegate, so it has no subagent row.
func Layout() plan.Layout {
	return plan.Layout{Engine: events.EngineCodex, MemoryFile: "AGENTS.md", PromptScoped: true, ReadsMemoryFile: true,
		Why: "app-server kept warm across sessions",
		Rows: []plan.Row{
			{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: plan.PreambleRegion},
			{Type: events.ArtifactCommand, Scope: events.ScopeGlobal, Path: "prompts", Shape: plan.SingleMD, Exclusive: true, Native: true},
			{Type: events.ArtifactInstruction, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: plan.PreambleRegion, Native: true},
		}}
}
