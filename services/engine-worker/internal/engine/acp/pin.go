package acp

import (
	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// The pinned ACP agents. Each is the newest release that installs and runs
// on Node 20 here; the adapter, its golden transcripts and the conformance
// suite were checked against exactly these.
const (
	// GeminiVersion: the newest release (it needs Node >= 20).
	GeminiVersion = "0.61.0"
	// QwenVersion: the newest release for Node 20; 0.16 and later declare
	// Node >= 22 and npm on Node 20 resolves to this one.
	QwenVersion = "0.15.10"
	// CopilotVersion: the newest release, as its native platform package.
	CopilotVersion = "1.0.102"
	// OpenCodeVersion: the newest release, as its native platform package.
	OpenCodeVersion = "1.18.33"
	// ClineVersion: the newest release, as its native platform package (the
	// wrapper's helper packages declare Node >= 22; the binary needs none).
	ClineVersion = "3.0.65"
)

// Pin is the release of the profile's agent and how it installs; false for
// an agent Clopen does not install (Cursor's, an operator's own).
func (p *Profile) Pin() (engine.Pin, bool) {
	pin := func(pkg, version, bin string) engine.Pin { return engine.NPMPin(pkg, version, version, bin) }
	switch p.Type {
	case events.EngineGemini:
		return pin("@google/gemini-cli", GeminiVersion, "node_modules/@google/gemini-cli/bundle/gemini.js"), true
	case events.EngineQwen:
		return pin("@qwen-code/qwen-code", QwenVersion, "node_modules/@qwen-code/qwen-code/cli.js"), true
	case events.EngineCopilot:
		return pin("@github/copilot-linux-x64", CopilotVersion, "node_modules/@github/copilot-linux-x64/copilot"), true
	case events.EngineOpenCode:
		return pin("opencode-linux-x64", OpenCodeVersion, "node_modules/opencode-linux-x64/bin/opencode"), true
	case events.EngineCline:
		return pin("@cline/cli-linux-x64", ClineVersion, "node_modules/@cline/cli-linux-x64/bin/cline"), true
	}
	return engine.Pin{}, false
}
