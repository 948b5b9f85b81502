package engine

import (
	"context"

	"clopen.dev/pkg/events"
)

// Cataloger is implemented by engines that can list their models. The
// catalog is the truth about an engine's models: what the picker offers,
// how a requested reasoning effort is clamped, and which model, provider
// and account structured generation runs on.
type Cataloger interface {
	// Models returns the catalog as the request's account sees it, the
	// engine's default model first. A catalog read from somewhere (a CLI, a
	// provider's API) returns the failure as an error; the worker turns it
	// into an empty list, never into a stale copy.
	Models(ctx context.Context, req CatalogRequest) ([]events.EngineModel, error)
}

// CatalogRequest says whose catalog to list.
type CatalogRequest struct {
	Tenant    string
	AccountID string // "" for the engine's active account
	// ConfigDir is the engine's isolated config dir of this tenant and
	// account, for engines that read their catalog through their CLI.
	ConfigDir string
	Provider  string // only this provider's models; "" for all
}

// AvailableFirst moves the first model that can run to the front when
// the default (the first) cannot: a model marked Unavailable is never a
// default. The order is otherwise kept.
func AvailableFirst(models []events.EngineModel) []events.EngineModel {
	if len(models) == 0 || models[0].Unavailable == "" {
		return models
	}
	for i, m := range models {
		if m.Unavailable == "" {
			return append(append([]events.EngineModel{m}, models[:i]...), models[i+1:]...)
		}
	}
	return models
}

// Unavailable is the error of a turn asked to run a model its catalog
// marks unavailable: it fails at once, with the catalog's reason.
func Unavailable(engine events.EngineType, model, reason string) error {
	return Errorf(events.KindModelUnavailable, "%s cannot run %s: %s", engine, model, reason)
}

// FindModel returns the entry of id in models.
func FindModel(models []events.EngineModel, id string) (events.EngineModel, bool) {
	for _, m := range models {
		if m.ID == id {
			return m, true
		}
	}
	return events.EngineModel{}, false
}

// ClampEffort returns the reasoning effort a turn on model runs with: token
// when the model offers that level, the model's default when token is empty,
// unknown or stale (a level of another model), and "" when the model has no
// reasoning control at all.
func ClampEffort(model events.EngineModel, token string) string {
	rc := model.Capabilities.ReasoningControl
	switch {
	case rc == nil:
		return ""
	case token != "" && rc.Has(token):
		return token
	}
	return rc.Default
}

// ResolveTarget picks the catalog entry structured generation runs on; the
// entry's provider and account are the ones to use. The catalog is the
// truth and the request's model and provider are preferences: a model the
// catalog has is used, served by the preferred provider when several serve
// it; a model it lacks (stale, removed, empty) falls back to the engine's
// default model, the preferred provider's first model when the catalog has
// that provider, else its first model. An empty catalog is an error of kind
// events.KindModelUnavailable.
func ResolveTarget(engine events.EngineType, models []events.EngineModel, model, provider string) (events.EngineModel, error) {
	if len(models) == 0 {
		return events.EngineModel{}, Errorf(events.KindModelUnavailable, "%s has no models to generate with", engine)
	}
	pick := func(match func(events.EngineModel) bool) (events.EngineModel, bool) {
		var first *events.EngineModel
		for i, m := range models {
			if !match(m) {
				continue
			}
			if provider == "" || m.Provider == provider {
				return m, true
			}
			if first == nil {
				first = &models[i]
			}
		}
		if first == nil {
			return events.EngineModel{}, false
		}
		return *first, true
	}
	if model != "" {
		if m, ok := pick(func(m events.EngineModel) bool { return m.ID == model }); ok {
			return m, nil
		}
	}
	if provider != "" {
		if m, ok := pick(func(m events.EngineModel) bool { return m.Provider == provider }); ok {
			return m, nil
		}
	}
	return models[0], nil
}
