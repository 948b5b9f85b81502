package scripted

import (
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
)

// Layout is where the scripted engine reads Clopen's artifacts: AGENTS.md
// at the root of its config dir, whose blocks it reports, and everything
// else in the prompt.
func Layout() plan.Layout {
	return plan.Layout{Engine: events.EngineScripted, MemoryFile: "AGENTS.md", PromptScoped: true, ReadsMemoryFile: true,
		Why: "the built-in player: reads AGENTS.md from its config dir and reports what it got",
		Rows: []plan.Row{
			{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: plan.PreambleRegion},
			{Type: events.ArtifactSubagent, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: plan.PreambleRegion},
			{Type: events.ArtifactInstruction, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: plan.PreambleRegion, Native: true},
		}}
}
