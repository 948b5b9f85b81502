package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
)

// catalog checks the engine's model catalog: non-empty, the harness's model
// in it, every entry the engine's own and encodable, ids unique, reasoning
// defaults among the levels, and a provider the engine does not have an
// empty list rather than an error. (That a catalog that fails to load reaches
// the picker as an empty list is the worker's rule, tested there.)
func (s *suite) catalog(t *testing.T) {
	eng := s.h.New(t, Env{BaseURL: s.sb.BaseURL, Wrap: s.sb.Wrap, StateDir: t.TempDir()})
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
