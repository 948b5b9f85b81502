package engines

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/codex"
)

// CodexVersion is the pinned Codex release: the newest on the registry
// when this adapter was built. Its app-server protocol, its model catalog
// (codex.Models) and the recorded transcripts are checked against it.
const CodexVersion = "0.171.0"

// codexRow installs Codex's linux-x64 platform package: the @openai/codex
// version tagged -linux-x64 carries the native musl binary and nothing for
// Node to run, so it works whatever the Node version (the launcher package
// would also pull the other platforms' binaries).
var codexRow = Spec{
	Type:        events.EngineCodex,
	Packages:    []Package{{Name: "@openai/codex", Version: CodexVersion + "-linux-x64"}},
	Version:     CodexVersion,
	VersionArgs: []string{"--version"},
	Bin:         "node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex",
	Account: func(ctx context.Context, s Setup) error {
		_, err := s.codexCredentials().Credential(ctx, "", "")
		return err
	},
	ModelServer: func(ctx context.Context, s Setup) string {
		c, _ := s.codexCredentials().Credential(ctx, "", "")
		return c.BaseURL
	},
	Factory: func(bin string, s Setup) engine.Factory {
		creds := codexAccounts{s}
		return func(_ context.Context, key engine.Key) (engine.Engine, error) {
			return codex.New(codex.Config{Bin: bin, StateDir: s.stateDir(events.EngineCodex),
				Credentials: creds, MaxRetries: 2, Logger: s.Logger}, key), nil
		}
	},
}

func (s Setup) codexCredentials() codex.EnvCredentials {
	return codex.EnvCredentials{Getenv: s.getenv, BaseURL: s.LLMBaseURL}
}
