package scripted_test

import (
	"context"
	"encoding/json"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/scripted"
)

func TestCatalog(t *testing.T) {
	lib, err := scripted.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	e := scripted.New(lib)
	models, err := e.Models(context.Background(), engine.CatalogRequest{Tenant: "t1"})
	if err != nil || len(models) != len(lib.Names()) {
		t.Fatalf("Models = %d models, %v; want one per scenario (%d)", len(models), err, len(lib.Names()))
	}
	if models[0].ID != "scripted/"+scripted.DefaultScenario {
		t.Errorf("first model %s, want the default scenario", models[0].ID)
	}
	seen := map[string]bool{}
	for _, m := range models {
		if seen[m.ID] || m.Engine != events.EngineScripted || m.Provider != scripted.Provider {
			t.Errorf("entry %+v: duplicate or wrongly attributed", m)
		}
		seen[m.ID] = true
		if _, err := lib.Resolve(m.ID); err != nil {
			t.Errorf("catalog model %s does not play: %v", m.ID, err)
		}
		if got := engine.ClampEffort(m, "high"); got != "" {
			t.Errorf("%s has no effort knob, but ClampEffort(high) = %q", m.ID, got)
		}
		if _, err := m.MarshalJSON(); err != nil {
			t.Errorf("%s does not encode: %v", m.ID, err)
		}
	}
	if m, _ := engine.FindModel(models, "scripted/tools"); !m.Capabilities.Tools {
		t.Errorf("scripted/tools does not report tools: %+v", m.Capabilities)
	}
	if other, _ := e.Models(context.Background(), engine.CatalogRequest{Provider: "openai"}); len(other) != 0 {
		t.Errorf("provider openai has %d scripted models, want none", len(other))
	}
}

func TestGenerate(t *testing.T) {
	lib, _ := scripted.LoadLibrary("")
	schema := json.RawMessage(`{"type":"object","required":["name","tags","level","count","draft"],"properties":{
		"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"level":{"enum":["low","high"]},
		"count":{"type":"integer","minimum":3},"draft":{"type":["boolean","null"]},"kind":{"const":"skill"}}}`)
	doc, err := engine.Generate(context.Background(), scripted.New(lib), engine.GenerateRequest{Schema: schema, Prompt: "anything"})
	want := `{"count":3,"draft":true,"kind":"skill","level":"low","name":"scripted name","tags":["scripted tags"]}`
	if err != nil || string(doc) != want {
		t.Errorf("Generate = %s, %v; want %s", doc, err, want)
	}
}
