package pi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

var _ engine.Cataloger = (*Engine)(nil)

// Models implements engine.Cataloger with pi's own catalog: a pi of its
// own (`--mode rpc --no-session`, on the instance's agent dir and so the
// account's models.json) answers get_available_models, the models of the
// providers the account has a key for, with pi's limits, input kinds,
// prices and thinking levels (ModelInfo.Entry). DefaultModel comes first
// when pi has it. A pi that does not start, dies, refuses or does not
// answer before ctx ends gives an empty list and the error: never a stale
// catalog.
func (e *Engine) Models(ctx context.Context, req engine.CatalogRequest) ([]events.EngineModel, error) {
	models, err := e.readModels(ctx, req.ConfigDir)
	if err != nil {
		return []events.EngineModel{}, err
	}
	out := []events.EngineModel{}
	for _, m := range models {
		if m.ID != "" && (req.Provider == "" || m.Provider == req.Provider) {
			out = append(out, m.Entry())
		}
	}
	if i := slices.IndexFunc(out, func(m events.EngineModel) bool { return m.ID == DefaultModel }); i > 0 {
		def := out[i]
		out = slices.Insert(slices.Delete(out, i, i+1), 0, def)
	}
	return out, nil
}

// readModels asks a fresh pi for get_available_models and stops it.
func (e *Engine) readModels(ctx context.Context, configDir string) ([]ModelInfo, error) {
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return nil, err
	}
	if cred, err = route(e.cfg.Sandbox, e.key.Tenant, "", cred); err != nil {
		return nil, err
	}
	h := newHome(e.cfg.StateDir, e.key.Tenant, e.key.Account, configDir)
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return nil, fmt.Errorf("pi state dir: %w", err)
	}
	if err := h.writeModels(cred, DefaultModel); err != nil {
		return nil, err
	}
	// It runs in the instance's HOME, confined like every other pi.
	confine, err := e.cfg.Sandbox.For(e.key.Tenant, e.cfg.Bin, h.dir, cred.BaseURL, h.state()...)
	if err != nil {
		return nil, err
	}
	argv := e.cfg.Argv("--mode", "rpc", "--no-session")
	c, err := startConn(argv, h.environ(cred), h.dir, e.cfg.KillGrace, e.cfg.Tap, confine)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindNotInstalled, Msg: "start pi: " + err.Error(), Err: err}
	}
	e.Procs.Use(c)
	// Retired in the background: a pi slow to die does not hold the answer up.
	defer e.Procs.Release(c, "", false)
	data, err := c.call(ctx, map[string]any{"type": "get_available_models"})
	switch {
	case errors.Is(err, errClosed):
		return nil, exitError(c.Err(), c.Stderr())
	case err != nil:
		return nil, fmt.Errorf("pi get_available_models: %w", err)
	}
	models, err := DecodeModels(data)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindCrashed, Msg: "pi get_available_models answered " + err.Error(), Err: err}
	}
	return models, nil
}
