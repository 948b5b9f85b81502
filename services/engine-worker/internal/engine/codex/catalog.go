package codex

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

var _ engine.Cataloger = (*Engine)(nil)

// Models implements engine.Cataloger with the pinned CLI's catalog
// (Models), the default model first, marked Unavailable where the
// account's endpoint cannot run it (and then never first). It fails only
// when the account's credentials cannot be read: the catalog is static, as
// the CLI's own is for API-key accounts. A provider other than openai has
// no models.
func (e *Engine) Models(ctx context.Context, req engine.CatalogRequest) ([]events.EngineModel, error) {
	if req.Provider != "" && req.Provider != Provider {
		return []events.EngineModel{}, nil
	}
	var cred Credential
	if e.cfg.Credentials != nil {
		c, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
		if err != nil {
			return nil, err
		}
		cred = c
	}
	out := Catalog()
	for i := range out {
		out[i].Unavailable = Unavailable(out[i].ID, cred)
	}
	return engine.AvailableFirst(out), nil
}

// Catalog returns Models as catalog entries, in order.
func Catalog() []events.EngineModel {
	out := make([]events.EngineModel, 0, len(Models))
	for _, m := range Models {
		out = append(out, m.Entry())
	}
	return out
}
