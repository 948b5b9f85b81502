package engine

import (
	"errors"
	"testing"

	"clopen.dev/pkg/events"
)

func withLevels(def string, values ...string) events.EngineModel {
	return events.EngineModel{ID: "m", Engine: events.EngineClaudeCode, Capabilities: events.ModelCapabilities{
		ReasoningControl: &events.ReasoningControl{Levels: events.ReasoningLevels(values...), Default: def}}}
}

func TestClampEffort(t *testing.T) {
	adaptive := withLevels("auto", "auto", "low", "medium", "high", "xhigh", "max")
	budgeted := withLevels("auto", "off", "auto")
	knobless := events.EngineModel{ID: "m", Engine: events.EngineScripted}
	tests := []struct {
		name  string
		model events.EngineModel
		give  string
		want  string
	}{
		{"a level the model has", adaptive, "high", "high"},
		{"unset takes the default", adaptive, "", "auto"},
		{"stale level of another model", adaptive, "off", "auto"},
		{"unknown token", adaptive, "ludicrous", "auto"},
		{"case matters", adaptive, "HIGH", "auto"},
		{"off where the model allows it", budgeted, "off", "off"},
		{"effort on a budgeted model", budgeted, "max", "auto"},
		{"no reasoning control", knobless, "high", ""},
		{"no reasoning control, unset", knobless, "", ""},
	}
	for _, tt := range tests {
		if got := ClampEffort(tt.model, tt.give); got != tt.want {
			t.Errorf("%s: ClampEffort(%q) = %q, want %q", tt.name, tt.give, got, tt.want)
		}
	}
}

func TestResolveTarget(t *testing.T) {
	m := func(id, provider string) events.EngineModel {
		return events.EngineModel{ID: id, Provider: provider, Engine: events.EngineOpenCode}
	}
	catalog := []events.EngineModel{m("big", "anthropic"), m("gpt-x", "openai"), m("shared", "openrouter"), m("shared", "openai"), m("small", "anthropic")}
	tests := []struct {
		name, model, provider string
		wantID, wantProvider  string
	}{
		{"known model, no hint", "gpt-x", "", "gpt-x", "openai"},
		{"known model, stale provider hint: the catalog wins", "gpt-x", "anthropic", "gpt-x", "openai"},
		{"model served twice: the hint chooses", "shared", "openai", "shared", "openai"},
		{"model served twice, no hint: the first", "shared", "", "shared", "openrouter"},
		{"unknown model: the default", "gone-model", "", "big", "anthropic"},
		{"unknown model, known provider: that provider's first", "gone-model", "openai", "gpt-x", "openai"},
		{"unknown model, unknown provider: the default", "gone-model", "nowhere", "big", "anthropic"},
		{"nothing asked: the default", "", "", "big", "anthropic"},
		{"only a provider: its first", "", "openrouter", "shared", "openrouter"},
	}
	for _, tt := range tests {
		got, err := ResolveTarget(events.EngineOpenCode, catalog, tt.model, tt.provider)
		if err != nil || got.ID != tt.wantID || got.Provider != tt.wantProvider {
			t.Errorf("%s: ResolveTarget(%q, %q) = %s@%s, %v; want %s@%s", tt.name, tt.model, tt.provider,
				got.ID, got.Provider, err, tt.wantID, tt.wantProvider)
		}
	}
	_, err := ResolveTarget(events.EngineOpenCode, nil, "big", "")
	var e *Error
	if !errors.As(err, &e) || e.Kind != events.KindModelUnavailable {
		t.Errorf("empty catalog: err = %v, want kind model_unavailable", err)
	}
}

func TestFindModel(t *testing.T) {
	catalog := []events.EngineModel{{ID: "a"}, {ID: "b", Name: "B"}}
	if m, ok := FindModel(catalog, "b"); !ok || m.Name != "B" {
		t.Errorf("FindModel(b) = %+v, %v", m, ok)
	}
	if _, ok := FindModel(catalog, "c"); ok {
		t.Error("FindModel(c) found a model")
	}
}
