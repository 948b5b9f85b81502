package engines

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/codex"
)

// CodexVersion is the pinned Codex release (codex.Version).
const CodexVersion = codex.Version

// codexRow is Codex, installed as codex.Pin says.
var codexRow = Spec{
	Type:   events.EngineCodex,
	Pin:    codex.Pin(),
	Layout: codex.Layout(),
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
			return codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: s.stateDir(events.EngineCodex), Logger: s.Logger, Sandbox: s.Sandbox}, Credentials: creds, MaxRetries: 2}, key), nil
		}
	},
}

func (s Setup) codexCredentials() codex.EnvCredentials {
	return codex.EnvCredentials{Getenv: s.getenv, BaseURL: s.LLMBaseURL}
}
