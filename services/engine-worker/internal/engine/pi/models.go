package pi

import (
	"cmp"
	"slices"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// DefaultModel is the model a turn without one runs on: the newest Claude
// Sonnet of the pinned pi's built-in Anthropic catalog.
const DefaultModel = "claude-sonnet-4-6"

// ThinkingLevels are pi's thinking levels, low to high.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// defaultThinking is the level pi gives a turn without one on a model that
// reasons.
const defaultThinking = "medium"

// Levels are the thinking levels pi offers on m, low to high
// (getSupportedThinkingLevels): off alone for a model that does not
// reason; else every level the model's thinkingLevelMap does not map to
// null, xhigh only where it maps it.
func (m ModelInfo) Levels() []string {
	if !m.Reasoning {
		return []string{"off"}
	}
	var out []string
	for _, l := range ThinkingLevels {
		mapped, ok := m.ThinkingLevelMap[l]
		if ok && string(mapped) == "null" || l == "xhigh" && !ok {
			continue
		}
		out = append(out, l)
	}
	return out
}

// Entry is m as a catalog entry: pi's limits, input kinds and price (an
// all-zero price, pi's default for models it has none for, is unknown),
// tools, and for a model that reasons a reasoning control of its thinking
// levels with pi's default (medium, or the level pi clamps it to). pi has
// no native structured output, so StructuredOutput is false: generation
// goes through a plain turn (engine.GenerateByRun).
func (m ModelInfo) Entry() events.EngineModel {
	in := []events.Modality{}
	for _, s := range m.Input {
		if mod := events.Modality(s); mod.Valid() && !slices.Contains(in, mod) {
			in = append(in, mod)
		}
	}
	e := events.EngineModel{ID: m.ID, Name: cmp.Or(m.Name, m.ID), Provider: m.Provider, Engine: events.EnginePi,
		Limit:        events.ModelLimit{Input: max(m.ContextWindow, 0), Output: max(m.MaxTokens, 0)},
		Modalities:   events.ModelModalities{Input: in, Output: []events.Modality{events.ModalityText}},
		Capabilities: events.ModelCapabilities{Reasoning: m.Reasoning, Tools: true}}
	if levels := m.Levels(); m.Reasoning && len(levels) > 0 {
		e.Capabilities.ReasoningControl = &events.ReasoningControl{Levels: events.ReasoningLevels(levels...),
			Default: nearest(levels, defaultThinking)}
	}
	if m.Cost != nil && *m.Cost != (events.ModelCost{}) {
		cost := *m.Cost
		e.Cost = &cost
	}
	return e
}

// nearest is pi's clampThinkingLevel: level when offered, else the next
// offered level above it, else the next below.
func nearest(levels []string, level string) string {
	at := slices.Index(ThinkingLevels, level)
	for i := at; i >= 0 && i < len(ThinkingLevels); i++ {
		if slices.Contains(levels, ThinkingLevels[i]) {
			return ThinkingLevels[i]
		}
	}
	for i := at - 1; i >= 0; i-- {
		if slices.Contains(levels, ThinkingLevels[i]) {
			return ThinkingLevels[i]
		}
	}
	return levels[0]
}

// ClampThinking is the level a turn on m asks pi for: engine.ClampEffort
// on m's catalog entry (the requested level when m offers it, else m's
// default, so stale levels and other engines' become the default), and off
// for a model that does not reason.
func ClampThinking(m ModelInfo, level string) string {
	return cmp.Or(engine.ClampEffort(m.Entry(), level), "off")
}
