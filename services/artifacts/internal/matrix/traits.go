package matrix

import (
	"clopen.dev/pkg/events"
)

// Traits are the per-engine facts rendering needs beyond the rows.
type Traits struct {
	// MemoryFile is the engine's global memory file in the config dir.
	MemoryFile string
	// PromptScoped engines keep a process (or server) across sessions, so
	// their disk config cannot express one session's profile: skills and
	// subagents reach them in the run's prompt preamble instead, and their
	// synthetic blocks on disk stay empty.
	PromptScoped bool
	// ReadsGlobalMemoryFile is false for engines that ignore the memory
	// file; they get the global instructions in the prompt as well.
	ReadsGlobalMemoryFile bool
	// CanDelegateSubagents engines are told about subagents; the others hear
	// nothing of them (no hallucinated delegation).
	CanDelegateSubagents bool
	// Why records the reason for these choices.
	Why string
}

var traits = map[events.EngineType]Traits{
	events.EngineClaudeCode: {MemoryFile: "CLAUDE.md", ReadsGlobalMemoryFile: true, CanDelegateSubagents: true,
		Why: "a fresh CLI per run over a pruned dir: the disk expresses the profile"},
	events.EngineCodex: {MemoryFile: "AGENTS.md", PromptScoped: true, ReadsGlobalMemoryFile: true,
		Why: "app-server kept warm across sessions"},
	events.EngineCopilot: {MemoryFile: ".copilot/AGENTS.md", PromptScoped: true, ReadsGlobalMemoryFile: true,
		Why: "ACP process kept warm across sessions"},
	events.EngineOpenCode: {MemoryFile: "opencode/AGENTS.md", PromptScoped: true, ReadsGlobalMemoryFile: true, CanDelegateSubagents: true,
		Why: "pooled opencode serve; inline agents"},
	events.EngineQwen: {MemoryFile: ".qwen/QWEN.md", ReadsGlobalMemoryFile: true,
		Why: "a fresh CLI per run over a pruned dir"},
	events.EnginePi: {MemoryFile: "AGENTS.md", ReadsGlobalMemoryFile: true, CanDelegateSubagents: true,
		Why: "rpc process per run; delegation through Clopen's dispatch tool"},
	events.EngineCursor: {MemoryFile: "AGENTS.md", PromptScoped: true, CanDelegateSubagents: true,
		Why: "does not read a global memory file"},
	events.EngineCline: {MemoryFile: "AGENTS.md", PromptScoped: true, CanDelegateSubagents: true,
		Why: "does not read a global memory file; delegation through Clopen's dispatch tool"},
	events.EngineGemini: {MemoryFile: ".gemini/GEMINI.md", PromptScoped: true, ReadsGlobalMemoryFile: true,
		Why: "ACP process kept warm; reads ~/.gemini/GEMINI.md"},
	events.EngineACP: {MemoryFile: "AGENTS.md", PromptScoped: true,
		Why: "an unknown ACP agent: assume it reads nothing, tell it everything in the prompt"},
	events.EngineScripted: {MemoryFile: "AGENTS.md", PromptScoped: true, ReadsGlobalMemoryFile: true, CanDelegateSubagents: true,
		Why: "the built-in player: reads AGENTS.md from its config dir and reports what it got"},
}

// TraitsOf returns engine's traits; ok is false for an unknown engine.
func TraitsOf(engine events.EngineType) (Traits, bool) {
	t, ok := traits[engine]
	return t, ok
}

// PromptScoped reports whether engine gets skills and subagents in the
// prompt rather than on disk.
func PromptScoped(engine events.EngineType) bool { return traits[engine].PromptScoped }

// ReadsGlobalMemoryFile reports whether engine reads its memory file.
func ReadsGlobalMemoryFile(engine events.EngineType) bool {
	return traits[engine].ReadsGlobalMemoryFile
}

// CanDelegateSubagents reports whether engine is told about subagents.
func CanDelegateSubagents(engine events.EngineType) bool { return traits[engine].CanDelegateSubagents }
