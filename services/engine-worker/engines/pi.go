package engines

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// PiVersion is the pinned pi release (pi.Version).
const PiVersion = pi.Version

// piRow is pi, installed as pi.Pin says.
var piRow = Spec{
	Type:   events.EnginePi,
	Pin:    pi.Pin(),
	Layout: pi.Layout(),
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
			return pi.New(pi.Config{Process: engine.Process{Bin: bin, StateDir: s.stateDir(events.EnginePi), Logger: s.Logger, Sandbox: s.Sandbox}, Credentials: creds, Retry: true}, key), nil
		}
	},
}

func (s Setup) piCredentials() pi.EnvCredentials {
	return pi.EnvCredentials{Getenv: s.getenv, BaseURL: s.LLMBaseURL}
}
