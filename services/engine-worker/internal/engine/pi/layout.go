package pi

import (
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
)

// Layout is where pi reads Clopen's artifacts, relative to its
// PI_CODING_AGENT_DIR. Subagents are a block of AGENTS.md: pi delegates
// through Clopen's dispatch tool.
func Layout() plan.Layout {
	return plan.Layout{Engine: events.EnginePi, MemoryFile: "AGENTS.md", ReadsMemoryFile: true,
		Why: "rpc process per run; delegation through Clopen's dispatch tool",
		Rows: []plan.Row{
			{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: "skills", Shape: plan.FolderMD, Exclusive: true, Native: true},
			{Type: events.ArtifactSkill, Scope: events.ScopeProject, Path: ".pi/skills", Shape: plan.FolderMD, Native: true},
			{Type: events.ArtifactCommand, Scope: events.ScopeGlobal, Path: "prompts", Shape: plan.SingleMD, Exclusive: true, Native: true},
			{Type: events.ArtifactSubagent, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: plan.PreambleRegion},
			{Type: events.ArtifactInstruction, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: plan.PreambleRegion, Native: true},
		}}
}
