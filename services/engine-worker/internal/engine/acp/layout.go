package acp

import (
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
)

// Layout is where the profile's agent reads Clopen's artifacts, relative to
// the config dir the pool points it at: HOME for Qwen (.qwen/), Copilot
// (.copilot/) and Gemini (.gemini/), XDG_CONFIG_HOME for OpenCode (hence
// opencode/), and AGENTS.md at the root for the agents with no convention
// of their own (Cline, Cursor, an operator's agent).
func (p *Profile) Layout() plan.Layout {
	skill := func(path string) plan.Row {
		return plan.Row{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: path, Shape: plan.PreambleRegion}
	}
	instructions := func(path string, native bool) plan.Row {
		return plan.Row{Type: events.ArtifactInstruction, Scope: events.ScopeGlobal, Path: path, Shape: plan.PreambleRegion, Native: native}
	}
	subagents := plan.Row{Type: events.ArtifactSubagent, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: plan.PreambleRegion}
	switch p.Type {
	case events.EngineQwen:
		return plan.Layout{Engine: p.Type, MemoryFile: ".qwen/QWEN.md", ReadsMemoryFile: true,
			Why: "a fresh CLI per run over a pruned dir",
			Rows: []plan.Row{
				{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: ".qwen/skills", Shape: plan.FolderMD, Native: true},
				instructions(".qwen/QWEN.md", true),
			}}
	case events.EngineCopilot:
		return plan.Layout{Engine: p.Type, MemoryFile: ".copilot/AGENTS.md", PromptScoped: true, ReadsMemoryFile: true,
			Why: "ACP process kept warm across sessions",
			Rows: []plan.Row{
				{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: ".copilot/skills", Shape: plan.FolderMD, Native: true},
				instructions(".copilot/AGENTS.md", true),
			}}
	case events.EngineGemini:
		return plan.Layout{Engine: p.Type, MemoryFile: ".gemini/GEMINI.md", PromptScoped: true, ReadsMemoryFile: true,
			Why:  "ACP process kept warm; reads ~/.gemini/GEMINI.md",
			Rows: []plan.Row{skill(".gemini/GEMINI.md"), instructions(".gemini/GEMINI.md", true)}}
	case events.EngineOpenCode:
		return plan.Layout{Engine: p.Type, MemoryFile: "opencode/AGENTS.md", PromptScoped: true, ReadsMemoryFile: true,
			Why: "pooled opencode serve; inline agents",
			Rows: []plan.Row{
				skill("opencode/AGENTS.md"),
				{Type: events.ArtifactCommand, Scope: events.ScopeGlobal, Path: "opencode/command", Shape: plan.SingleMD, Exclusive: true, Native: true},
				{Type: events.ArtifactSubagent, Scope: events.ScopeGlobal, Path: "opencode/agent", Shape: plan.SingleMD, Exclusive: true, Native: true, Dialect: plan.DialectOpenCode},
				{Type: events.ArtifactSubagent, Scope: events.ScopeProject, Path: ".opencode/agent", Shape: plan.SingleMD, Native: true, Dialect: plan.DialectOpenCode},
				instructions("opencode/AGENTS.md", true),
			}}
	case events.EngineCline:
		return plan.Layout{Engine: p.Type, MemoryFile: "AGENTS.md", PromptScoped: true,
			Why:  "does not read a global memory file; delegation through Clopen's dispatch tool",
			Rows: []plan.Row{skill("AGENTS.md"), subagents, instructions("AGENTS.md", false)}}
	case events.EngineCursor:
		return plan.Layout{Engine: p.Type, MemoryFile: "AGENTS.md", PromptScoped: true,
			Why:  "does not read a global memory file",
			Rows: []plan.Row{skill("AGENTS.md"), subagents, instructions("AGENTS.md", false)}}
	}
	return plan.Layout{Engine: p.Type, MemoryFile: "AGENTS.md", PromptScoped: true,
		Why:  "an unknown ACP agent: assume it reads nothing, tell it everything in the prompt",
		Rows: []plan.Row{skill("AGENTS.md"), instructions("AGENTS.md", false)}}
}
