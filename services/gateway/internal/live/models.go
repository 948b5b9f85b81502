package live

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/internal/identity"
)

// Engines is what the socket asks the engine workers (see engines.Engines).
type Engines interface {
	Models(ctx context.Context, p identity.Principal, engine events.EngineType, account, provider string) (events.ModelsReply, error)
}

// checkModels checks models.list: an engine of the vocabulary, and an
// account usable as a subject token when given.
func checkModels(f events.ClientFrame) error {
	if !f.Engine.Valid() {
		return invalid("engine: want one of %v, not %q", events.EngineTypes(), f.Engine)
	}
	if f.AccountID != "" {
		if err := events.ValidToken(f.AccountID); err != nil {
			return invalid("accountId: %v", err)
		}
	}
	return nil
}
