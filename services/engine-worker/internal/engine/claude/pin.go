package claude

import "clopen.dev/services/engine-worker/internal/engine"

// Version is the pinned Claude Code release: the newest on the registry
// when this adapter was built (its protocol is what the adapter, its golden
// transcripts and the conformance suite were checked against).
const Version = "2.1.332"

// Pin installs Version as the native platform package: a self-contained
// binary that needs no particular Node (the @anthropic-ai/claude-code
// wrapper of this version wants Node 22 and npm silently falls back to an
// old release on Node 20).
func Pin() engine.Pin {
	return engine.NPMPin("@anthropic-ai/claude-code-linux-x64", Version, Version,
		"node_modules/@anthropic-ai/claude-code-linux-x64/claude")
}
