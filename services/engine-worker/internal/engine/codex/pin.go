package codex

import "clopen.dev/services/engine-worker/internal/engine"

// Version is the pinned Codex release: the newest on the registry when
// this adapter was built. Its app-server protocol, its model catalog
// (Models) and the recorded transcripts are checked against it.
const Version = "0.171.0"

// Pin installs Codex's linux-x64 platform package: the @openai/codex
// version tagged -linux-x64 carries the native musl binary and nothing for
// Node to run, so it works whatever the Node version (the launcher package
// would also pull the other platforms' binaries).
func Pin() engine.Pin {
	return engine.NPMPin("@openai/codex", Version+"-linux-x64", Version,
		"node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex")
}
