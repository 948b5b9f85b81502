package artifacts

import (
	"path/filepath"

	"clopen.dev/pkg/events"
)

// realDirs is where each engine keeps artifacts in a real user's home,
// relative to it: the dirs detect lists and adopt may link entries from
// (skills and subagents), and every place a link may point into. This is
// the one per-engine fact artifacts keeps. It is not a layout: a layout is
// where the worker places content in the isolated config dir it points an
// engine at, and the worker never reads a real home, while detect & link
// reads the home of the machine artifacts itself runs on (RealHome).
var realDirs = map[string]map[events.EngineType][]string{
	events.ArtifactSkill: {
		events.EngineClaudeCode: {".claude/skills"},
		events.EngineQwen:       {".qwen/skills"},
		events.EngineCopilot:    {".copilot/skills"},
		events.EnginePi:         {".pi/agent/skills"},
	},
	events.ArtifactSubagent: {
		events.EngineClaudeCode: {".claude/agents"},
		events.EngineOpenCode:   {".config/opencode/agent"},
	},
	events.ArtifactCommand: {
		events.EngineClaudeCode: {".claude/commands"},
		events.EngineOpenCode:   {".config/opencode/command"},
		events.EngineCodex:      {".codex/prompts"},
		events.EnginePi:         {".pi/agent/prompts"},
	},
	events.ArtifactInstruction: {
		events.EngineClaudeCode: {".claude/CLAUDE.md"},
		events.EngineCodex:      {".codex/AGENTS.md"},
		events.EngineCopilot:    {".copilot/AGENTS.md"},
		events.EngineOpenCode:   {".config/opencode/AGENTS.md"},
		events.EngineQwen:       {".qwen/QWEN.md"},
		events.EnginePi:         {".pi/agent/AGENTS.md"},
		events.EngineGemini:     {".gemini/GEMINI.md"},
	},
}

// realDirs are the engine's real dirs of typ under RealHome: skills and
// subagents only, the kinds detect and adopt handle.
func (a *api) realDirs(typ string, engine events.EngineType) []string {
	if a.realHome == "" || (typ != events.ArtifactSkill && typ != events.ArtifactSubagent) {
		return nil
	}
	var out []string
	for _, rel := range realDirs[typ][engine] {
		out = append(out, filepath.Join(a.realHome, rel))
	}
	return out
}

// adoptable lists every real engine dir of home that entries may link into.
func adoptable(home string) []string {
	if home == "" {
		return nil
	}
	var out []string
	for _, typ := range []string{events.ArtifactSkill, events.ArtifactCommand, events.ArtifactSubagent, events.ArtifactInstruction} {
		for _, e := range events.EngineTypes() {
			for _, rel := range realDirs[typ][e] {
				out = append(out, filepath.Join(home, rel))
			}
		}
	}
	return out
}
