package claude

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

var _ engine.Cataloger = (*Engine)(nil)

// Models implements engine.Cataloger with the static table of the pinned
// CLI (Models): every model is Anthropic's, takes text, images and PDFs,
// and has tools, structured output and a reasoning control in Claude's
// vocabulary. It never fails; a provider other than anthropic has none.
func (e *Engine) Models(_ context.Context, req engine.CatalogRequest) ([]events.EngineModel, error) {
	if req.Provider != "" && req.Provider != Provider {
		return []events.EngineModel{}, nil
	}
	return Catalog(), nil
}

// Catalog returns Models as catalog entries, the default model first.
func Catalog() []events.EngineModel {
	out := make([]events.EngineModel, 0, len(Models))
	for _, m := range Models {
		cost := m.Cost
		out = append(out, events.EngineModel{
			ID: m.ID, Name: m.Name, Provider: Provider, Engine: events.EngineClaudeCode,
			Limit: events.ModelLimit{Input: m.Context, Output: m.Output},
			Modalities: events.ModelModalities{Input: []events.Modality{events.ModalityText, events.ModalityImage, events.ModalityPDF},
				Output: []events.Modality{events.ModalityText}},
			Capabilities: events.ModelCapabilities{Reasoning: true, Tools: true, StructuredOutput: true,
				ReasoningControl: &events.ReasoningControl{Levels: events.ReasoningLevels(m.Levels...), Default: m.Default}},
			Cost: &cost,
		})
	}
	return out
}
