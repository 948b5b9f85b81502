package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"

	"clopen.dev/services/engine-worker/internal/engine"
)

// catalog checks the engine's model catalog: non-empty, the harness's model
// in it, every entry the engine's own and encodable, ids unique, reasoning
// defaults among the levels, and a provider the engine does not have an
// empty list rather than an error. (That a catalog that fails to load reaches
// the picker as an empty list is the worker's rule, tested there.)
func (s *suite) catalog(t *testing.T) {
	eng := s.h.New(t, s.env(t))
	cat, ok := eng.(engine.Cataloger)
	if !ok {
		t.Fatalf("%T is not an engine.Cataloger", eng)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	models, err := cat.Models(ctx, engine.CatalogRequest{Tenant: "tenant-1", ConfigDir: t.TempDir()})
	if err != nil || len(models) == 0 {
		t.Fatalf("Models = %d models, %v; want a catalog", len(models), err)
	}
	if _, ok := engine.FindModel(models, s.h.Model); !ok {
		t.Errorf("the harness's model %s is not in the catalog", s.h.Model)
	}
	seen := map[string]bool{}
	for _, m := range models {
		key := m.ID + "@" + m.Provider
		if seen[key] || m.Engine != s.h.Type {
			t.Errorf("entry %s: duplicate, or engine %q is not %s", key, m.Engine, s.h.Type)
		}
		seen[key] = true
		if _, err := m.MarshalJSON(); err != nil {
			t.Errorf("entry %s does not encode: %v", key, err)
		}
		if rc := m.Capabilities.ReasoningControl; rc != nil && engine.ClampEffort(m, "no-such-level") != rc.Default {
			t.Errorf("entry %s: a stale level does not clamp to the default %q", key, rc.Default)
		}
	}
	none, err := cat.Models(ctx, engine.CatalogRequest{Tenant: "tenant-1", Provider: "no-such-provider"})
	if err != nil || len(none) != 0 {
		t.Errorf("Models of an unknown provider = %d models, %v; want none and no error", len(none), err)
	}
	s.catalogRuns(t, models)
}

// catalogRuns checks that the catalog offers only what runs: the default
// is available, the first available model of every other provider answers
// a turn, and a turn on a model marked unavailable fails at once with the
// catalog's reason.
func (s *suite) catalogRuns(t *testing.T, models []events.EngineModel) {
	if models[0].Unavailable != "" {
		t.Errorf("the default model %s is unavailable: %s", models[0].ID, models[0].Unavailable)
	}
	harness, _ := engine.FindModel(models, s.h.Model)
	tried := map[string]bool{harness.Provider: true}
	var unavailable *events.EngineModel
	for i, m := range models {
		if m.Unavailable != "" {
			if unavailable == nil {
				unavailable = &models[i]
			}
			continue
		}
		if tried[m.Provider] {
			continue
		}
		tried[m.Provider] = true
		c := s.newChat(t)
		rec := NewRecorder()
		res, err := c.turnOn(t, m.ID, "Say hello.", rec)
		if err != nil || res.Subtype != events.ResultSuccess {
			t.Errorf("a turn on %s, which the catalog offers, = %+v, %v", m.ID, res, err)
		}
	}
	if unavailable == nil {
		return
	}
	c := s.newChat(t)
	req := c.request("Say hello.", "", NewRecorder())
	req.Model = unavailable.ID
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	err := c.eng.Run(ctx, req, func(events.Output) error { return nil })
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("a turn on the unavailable %s took %v to fail", unavailable.ID, took.Round(time.Millisecond))
	}
	if engine.KindOf(err) != events.KindModelUnavailable || !strings.Contains(err.Error(), unavailable.Unavailable) {
		t.Errorf("a turn on the unavailable %s = %v (kind %s), want model_unavailable saying %q", unavailable.ID, err,
			engine.KindOf(err), unavailable.Unavailable)
	}
}

// structuredSchema is a commit-message shape; fakellm fills it
// deterministically (see its package doc).
const (
	structuredSchema = `{"type":"object","required":["message","kind"],"additionalProperties":false,"properties":{` +
		`"message":{"type":"string"},"kind":{"enum":["fix","feat"]},"files":{"type":"array","items":{"type":"integer"}}}}`
	structuredDoc = `{"files":[1],"kind":"fix","message":"fakellm"}`
)

// structured generates a document through engine.Generate (the engine's
// native structured output when it has one) and through the generic
// fallback, whose plain turns fakellm answers bare, fenced in prose, and
// truncated.
func (s *suite) structured(t *testing.T) {
	c := s.newChat(t)
	req := engine.GenerateRequest{Tenant: "tenant-1", Model: s.h.Model, Schema: json.RawMessage(structuredSchema),
		Prompt: "Write a commit message for the staged changes.", Workspace: c.workspace}
	generate := func(f func(context.Context, engine.Engine, engine.GenerateRequest) (json.RawMessage, error), prompt string) (json.RawMessage, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r := req
		r.Prompt = prompt + " " + req.Prompt
		return f(ctx, c.eng, r)
	}
	tests := []struct {
		name   string
		f      func(context.Context, engine.Engine, engine.GenerateRequest) (json.RawMessage, error)
		prompt string
		want   error // nil: the document comes back
	}{
		{"generate", engine.Generate, "", nil},
		{"fallback", engine.GenerateByRun, "", nil},
		{"fallback, fenced", engine.GenerateByRun, "@@JSON_FENCED@@", nil},
		{"fallback, truncated", engine.GenerateByRun, "@@JSON_TRUNCATED@@", engine.ErrTruncatedJSON},
	}
	for _, tt := range tests {
		doc, err := generate(tt.f, tt.prompt)
		switch {
		case tt.want != nil:
			if !errors.Is(err, tt.want) || engine.KindOf(err) == "" {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
			}
		case err != nil || string(doc) != structuredDoc:
			t.Errorf("%s = %s, %v; want %s", tt.name, doc, err, structuredDoc)
		}
	}
}
