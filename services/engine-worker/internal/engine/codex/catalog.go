package codex

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

var _ engine.Cataloger = (*Engine)(nil)

// Models implements engine.Cataloger with the pinned CLI's catalog
// (Models), the default model first. It never fails: the catalog is
// static, as the CLI's own is for API-key accounts. A provider other than
// openai has no models.
func (e *Engine) Models(_ context.Context, req engine.CatalogRequest) ([]events.EngineModel, error) {
	if req.Provider != "" && req.Provider != Provider {
		return []events.EngineModel{}, nil
	}
	return Catalog(), nil
}

// Catalog returns Models as catalog entries, in order.
func Catalog() []events.EngineModel {
	out := make([]events.EngineModel, 0, len(Models))
	for _, m := range Models {
		out = append(out, m.Entry())
	}
	return out
}
