package engines

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// PiVersion is the pinned pi release: the newest on the registry when this
// adapter was built, and it runs on Node 20 (it asks for >= 20.6). Its RPC
// protocol, its extension API (Clopen's permission and question
// extension) and the recorded transcripts are checked against it.
const PiVersion = "0.73.1"

// piRow installs pi: a Node program (dist/cli.js) with its dependencies.
var piRow = Spec{
	Type:        events.EnginePi,
	Packages:    []Package{{Name: "@mariozechner/pi-coding-agent", Version: PiVersion}},
	Version:     PiVersion,
	VersionArgs: []string{"--version"},
	Bin:         "node_modules/.bin/pi",
	Account: func(ctx context.Context, s Setup) error {
		_, err := s.piCredentials().Credential(ctx, "", "")
		return err
	},
	ModelServer: func(ctx context.Context, s Setup) string {
		c, _ := s.piCredentials().Credential(ctx, "", "")
		return c.BaseURL
	},
	Factory: func(bin string, s Setup) engine.Factory {
		creds := piAccounts{s}
		return func(_ context.Context, key engine.Key) (engine.Engine, error) {
			return pi.New(pi.Config{Bin: bin, StateDir: s.stateDir(events.EnginePi),
				Credentials: creds, Retry: true, Logger: s.Logger}, key), nil
		}
	},
}

func (s Setup) piCredentials() pi.EnvCredentials {
	return pi.EnvCredentials{Getenv: s.getenv, BaseURL: s.LLMBaseURL}
}
