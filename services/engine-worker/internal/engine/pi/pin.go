package pi

import "clopen.dev/services/engine-worker/internal/engine"

// Version is the pinned pi release: the newest on the registry when this
// adapter was built, and it runs on Node 20 (it asks for >= 20.6). Its RPC
// protocol, its extension API (Clopen's permission and question extension)
// and the recorded transcripts are checked against it.
const Version = "0.73.1"

// Pin installs pi: a Node program (dist/cli.js) with its dependencies.
func Pin() engine.Pin {
	return engine.NPMPin("@mariozechner/pi-coding-agent", Version, Version,
		"node_modules/.bin/pi")
}
