package scripted

import (
	"context"
	"encoding/json"
	"slices"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Provider is the provider id of the scripted models.
const Provider = "clopen"

var (
	_ engine.Cataloger           = (*Engine)(nil)
	_ engine.StructuredGenerator = (*Engine)(nil)
)

// Models implements engine.Cataloger: one model per scenario of the
// library, "scripted/<name>", the default scenario first. Scenarios have no
// effort knob and no known limits or price.
func (e *Engine) Models(_ context.Context, req engine.CatalogRequest) ([]events.EngineModel, error) {
	if req.Provider != "" && req.Provider != Provider {
		return []events.EngineModel{}, nil
	}
	names := e.lib.Names()
	if i := slices.Index(names, DefaultScenario); i > 0 {
		names = append(append([]string{DefaultScenario}, names[:i]...), names[i+1:]...)
	}
	out := make([]events.EngineModel, 0, len(names))
	for _, n := range names {
		sc := e.lib.scenarios[n]
		out = append(out, events.EngineModel{ID: "scripted/" + n, Name: n, Provider: Provider, Engine: events.EngineScripted,
			Modalities: events.ModelModalities{Input: []events.Modality{events.ModalityText}, Output: []events.Modality{events.ModalityText}},
			Capabilities: events.ModelCapabilities{Reasoning: has(sc.Steps, func(s Step) bool { return s.Reasoning != nil }),
				Tools: has(sc.Steps, func(s Step) bool { return s.Tool != nil || s.Agent != nil }), StructuredOutput: true}})
	}
	return out, nil
}

func has(steps []Step, f func(Step) bool) bool { return slices.ContainsFunc(steps, f) }

// Generate implements engine.StructuredGenerator without a model: the
// document is built from the schema alone, so generators can be tried and
// tested with no account. Every property is set; strings read
// "scripted <property>", numbers are their minimum or 1, booleans true,
// arrays hold one item, enums and consts give their first value.
func (e *Engine) Generate(ctx context.Context, req engine.GenerateRequest) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	var s any
	if err := json.Unmarshal(req.Schema, &s); err != nil {
		return nil, &engine.Error{Kind: events.KindInvalidRequest, Msg: "schema: " + err.Error(), Err: err}
	}
	return json.Marshal(example(s, "value", 0))
}

func example(schema any, name string, depth int) any {
	s, _ := schema.(map[string]any)
	if c, ok := s["const"]; ok {
		return c
	}
	if enum, _ := s["enum"].([]any); len(enum) > 0 {
		return enum[0]
	}
	if depth > 16 {
		return nil
	}
	typ, _ := s["type"].(string)
	if list, ok := s["type"].([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "object":
		props, _ := s["properties"].(map[string]any)
		obj := map[string]any{}
		for k, p := range props {
			obj[k] = example(p, k, depth+1)
		}
		return obj
	case "array":
		return []any{example(s["items"], name, depth+1)}
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return true
	case "null":
		return nil
	}
	return "scripted " + name
}
