package acp

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Models implements engine.Cataloger with what the agent itself reports:
// a process of its own, started in a scratch HOME with the instance's
// credentials and DefaultModel, answers initialize and session/new in an
// empty directory and is stopped; the scratch HOME goes with it, so the
// read leaves no session behind. The catalog is Catalog of that answer.
// An agent that does not start, fails session/new, or does not answer
// before ctx ends gives the error, never a stale or made-up list.
func (e *Engine) Models(ctx context.Context, req engine.CatalogRequest) ([]events.EngineModel, error) {
	r, err := e.probeSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the %s catalog: %w", e.p.Name, err)
	}
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return nil, fmt.Errorf("read the %s catalog: %w", e.p.Name, err)
	}
	out := []events.EngineModel{}
	for _, m := range MarkUnavailable(e.p, Catalog(e.p, r, e.cfg.DefaultModel), cred) {
		if req.Provider == "" || m.Provider == req.Provider {
			out = append(out, m)
		}
	}
	return out, nil
}

// MarkUnavailable marks the models the profile says cannot run with cred,
// and keeps a runnable one first.
func MarkUnavailable(p *Profile, models []events.EngineModel, cred Credential) []events.EngineModel {
	if p.Unavailable == nil {
		return models
	}
	for i, m := range models {
		models[i].Unavailable = p.Unavailable(m.ID, m.Provider, cred)
	}
	return engine.AvailableFirst(models)
}

// probeSession starts a process, opens one session and returns its
// session/new answer.
func (e *Engine) probeSession(ctx context.Context) (NewSessionResponse, error) {
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return NewSessionResponse{}, err
	}
	home, remove, err := e.scratchHome()
	if err != nil {
		return NewSessionResponse{}, err
	}
	defer remove()
	cwd := filepath.Join(home, "cwd")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		return NewSessionResponse{}, fmt.Errorf("catalog dir: %w", err)
	}
	l, err := e.command(home, "", cred, e.cfg.DefaultModel, cwd, nil)
	if err != nil {
		return NewSessionResponse{}, err
	}
	a, err := e.start(ctx, l)
	if err != nil {
		return NewSessionResponse{}, err
	}
	e.Procs.Use(a) // so Dispose stops it too
	defer e.stop(a)
	s, err := e.newSession(ctx, a, map[string]any{"cwd": cwd, "mcpServers": []map[string]any{}}, "")
	if err != nil {
		if ctx.Err() != nil {
			return NewSessionResponse{}, context.Cause(ctx)
		}
		return NewSessionResponse{}, err
	}
	return s.resp, nil
}

// Catalog converts a session/new answer into catalog entries, the model
// the session runs first. The models are the select option of category
// "model" (the one with id "model" when there are several: Cline's
// provider choice is one too), else the models field; each reported id
// goes through the profile's ModelEntry, which may drop models the
// adapter cannot run. A thought_level option becomes the reasoning control
// of the session's model, the only one it is known to describe. An answer
// with no usable model gives the one the session was started with
// (configured): an agent that works is never without a catalog.
func Catalog(p *Profile, r NewSessionResponse, configured string) []events.EngineModel {
	reported, current := reportedModels(r)
	rc := ReasoningOf(r.ConfigOptions)
	out := []events.EngineModel{}
	seen := map[string]bool{}
	first := -1
	for _, m := range reported {
		id, provider, ok := m.ID, p.Provider, m.ID != ""
		if ok && p.ModelEntry != nil {
			id, provider, ok = p.ModelEntry(m.ID)
		}
		if !ok || id == "" || seen[id+"@"+provider] {
			continue
		}
		seen[id+"@"+provider] = true
		entry := events.EngineModel{ID: id, Name: cmp.Or(m.Name, id), Provider: provider, Engine: p.Type,
			Capabilities: events.ModelCapabilities{Tools: true}}
		if m.ID == current && first < 0 {
			first = len(out)
			if rc != nil {
				entry.Capabilities.Reasoning, entry.Capabilities.ReasoningControl = true, rc
			}
		}
		out = append(out, entry)
	}
	if len(out) == 0 && configured != "" {
		return []events.EngineModel{{ID: configured, Name: configured, Provider: p.Provider, Engine: p.Type,
			Capabilities: events.ModelCapabilities{Tools: true}}}
	}
	if first < 0 {
		first = slices.IndexFunc(out, func(m events.EngineModel) bool { return m.ID == configured })
	}
	if first > 0 {
		def := out[first]
		out = slices.Insert(slices.Delete(out, first, first+1), 0, def)
	}
	return out
}

// Substituted reports the model an agent that RunsOnlyListed will run in
// place of the requested one: the session's current model, when the
// session/new answer lists models and requested is not among them (by the
// agent's id or the catalog's). ok is false when the request stands.
func Substituted(p *Profile, r NewSessionResponse, requested string) (runs string, ok bool) {
	if !p.RunsOnlyListed || requested == "" {
		return "", false
	}
	reported, current := reportedModels(r)
	if len(reported) == 0 || current == "" || current == requested {
		return "", false
	}
	for _, m := range reported {
		id := m.ID
		if p.ModelEntry != nil {
			id, _, _ = p.ModelEntry(m.ID)
		}
		if m.ID == requested || id == requested {
			return "", false
		}
	}
	return current, true
}

// reportedModel is one model as the agent names it.
type reportedModel struct{ ID, Name string }

// reportedModels reads the models of a session/new answer and the id of
// the one the session runs.
func reportedModels(r NewSessionResponse) (models []reportedModel, current string) {
	if o := modelOption(r.ConfigOptions); o != nil {
		for _, v := range o.Values() {
			if id, ok := v.Value.(string); ok {
				models = append(models, reportedModel{ID: id, Name: v.Name})
			}
		}
		cur, _ := o.CurrentValue.(string)
		return models, cur
	}
	if r.Models == nil {
		return nil, ""
	}
	for _, m := range r.Models.AvailableModels {
		models = append(models, reportedModel{ID: m.ModelID, Name: m.Name})
	}
	return models, r.Models.CurrentModelID
}

// modelOption is the select option that picks the model: the one with id
// "model", else the first of category "model" that is not a provider
// choice; nil when there is none.
func modelOption(opts []ConfigOption) *ConfigOption {
	var found *ConfigOption
	for i, o := range opts {
		if o.Category != "model" || o.Type != "select" || o.ID == "provider" {
			continue
		}
		if o.ID == "model" {
			return &opts[i]
		}
		if found == nil {
			found = &opts[i]
		}
	}
	return found
}

// thoughtOption is the select option of category thought_level; nil when
// the agent has none.
func thoughtOption(opts []ConfigOption) *ConfigOption {
	for i, o := range opts {
		if o.Category == "thought_level" && o.Type == "select" {
			return &opts[i]
		}
	}
	return nil
}

// ReasoningOf is the reasoning control a thought_level option offers: its
// values, in the agent's order and vocabulary, labelled with the agent's
// names, and its current value as the default. It is nil when there is no
// such option or its current value is not one of its values (no sound
// default to clamp to).
func ReasoningOf(opts []ConfigOption) *events.ReasoningControl {
	o := thoughtOption(opts)
	if o == nil {
		return nil
	}
	rc := &events.ReasoningControl{}
	for _, v := range o.Values() {
		value, ok := v.Value.(string)
		if !ok || value == "" || rc.Has(value) {
			continue
		}
		rc.Levels = append(rc.Levels, events.ReasoningLevel{Value: value, Label: cmp.Or(v.Name, events.ReasoningLevelLabel(value))})
	}
	rc.Default, _ = o.CurrentValue.(string)
	if !rc.Has(rc.Default) {
		return nil
	}
	return rc
}
