// Package codex drives OpenAI's Codex CLI through `codex app-server`: its
// newline-delimited JSON-RPC (without the "jsonrpc" field) over stdio, one
// process per chat, kept warm between the chat's turns.
//
// A turn opens a thread (thread/start; a resume is thread/fork of the
// thread it resumes, so every turn reports a new engine session and the
// resumed one stays as it was), starts a turn with its model and reasoning
// effort, and converts the notifications until turn/completed. Approvals
// are the server's requests: command and file-change approvals and MCP
// tool approvals go to Interaction.Permit, request_user_input questions to
// Interaction.AskUser. An interrupt is turn/interrupt (the thread stays
// usable); a cancel also stops the process group.
//
// Every app-server of a (tenant, account) shares one CODEX_HOME with a
// config.toml the adapter writes: a custom model provider at the
// credential's base URL (the CLI ignores OPENAI_BASE_URL), analytics and
// plugin fetches off. Threads run with approval policy "untrusted" and the
// workspace-write sandbox, so every command that is not read-only reaches
// Permit. MCP servers of the request are per-thread config.
package codex

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Config configures the adapter.
type Config struct {
	// Process: Bin is the codex executable (the native binary); StateDir
	// holds each instance's HOME, CODEX_HOME and TMPDIR:
	// StateDir/<tenant>/<account>. A request's ConfigDir, when set, is the
	// CODEX_HOME instead.
	engine.Process
	// Credentials gives each app-server its credentials; required.
	Credentials Credentials
	// MaxRetries is the provider's request and stream retries; 0 means none.
	MaxRetries int
}

// Engine is the Codex adapter for one (tenant, account). Run is safe for
// concurrent use; each chat has its own app-server.
type Engine struct {
	engine.CLI[*conn] // a warm app-server per chat
	cfg               Config
	key               engine.Key
	unknown           sync.Map // methods logged as unknown (once each)
}

// Stats counts what an instance did with its processes.
type Stats = engine.Stats

var (
	_ engine.Engine    = (*Engine)(nil)
	_ engine.Versioned = (*Engine)(nil)
	_ engine.Disposer  = (*Engine)(nil)
)

// New returns the adapter instance of key.
func New(cfg Config, key engine.Key) *Engine {
	cfg.Defaults()
	return &Engine{cfg: cfg, key: key, CLI: engine.NewCLI(engine.CLIConfig[*conn]{Engine: events.EngineCodex, Key: key,
		Logger: cfg.Logger, IdleTimeout: cfg.IdleTimeout, Version: engine.VersionCommand{Bin: cfg.Bin}})}
}

// Type reports events.EngineCodex.
func (e *Engine) Type() events.EngineType { return events.EngineCodex }

// Run runs one turn; see the package doc. It returns nil when the turn
// ended with a result (interrupted ones included), the classified error of
// a failed turn or a dead app-server, or the cancel cause after a cancel.
func (e *Engine) Run(ctx context.Context, req engine.Request, emit engine.Emit) error {
	return e.run(ctx, req, nil, emit)
}

// run runs one turn, its final answer held to schema when there is one
// (a structured generation). An ephemeral turn runs on an app-server of
// its own, stopped when the turn ends.
func (e *Engine) run(ctx context.Context, req engine.Request, schema json.RawMessage, emit engine.Emit) error {
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return err
	}
	model := cmp.Or(req.Model, defaultFor(cred))
	if why := Unavailable(model, cred); why != "" {
		return engine.Unavailable(events.EngineCodex, model, why)
	}
	if cred, err = route(e.cfg.Sandbox, e.key.Tenant, req.SessionID, cred); err != nil {
		return err
	}
	h := newHome(e.cfg.StateDir, e.key.Tenant, e.key.Account, req.ConfigDir)
	if err := h.prepare(cred, e.cfg.MaxRetries); err != nil {
		return err
	}
	confine, err := e.cfg.Sandbox.For(e.key.Tenant, e.cfg.Bin, req.Workspace, cred.BaseURL, h.state()...)
	if err != nil {
		return err
	}
	// A warm app-server fits only a turn it would have been confined for
	// the same way: never another tenant's, workspace's or state's.
	spec := strings.Join([]string{cred.fingerprint(), h.codexHome, req.Workspace, confine.Fingerprint()}, "\x00")
	warm := e.cfg.IdleTimeout > 0 && !req.Ephemeral
	var c *conn
	if warm {
		// Threads live in CODEX_HOME, not in the process, so the turn (which
		// forks the thread it resumes) runs on the chat's warm app-server as
		// well as on a fresh one, when it was started the same way
		// (credentials, CODEX_HOME, workspace, confinement); it only skips
		// the start.
		if idle, ok := e.Procs.Take(req.SessionID, func(c *conn) bool { return c.spec == spec }); ok {
			c = idle
		}
	}
	if c == nil {
		if c, err = e.start(ctx, h, cred, req.Workspace, spec, confine); err != nil {
			return err
		}
	}
	if !e.Procs.Use(c) {
		c.Stop(context.Background())
		return engine.ShuttingDown("codex")
	}
	t := &turn{c: c, req: req, emit: emit, log: e.Log.With("run_id", req.RunID), model: model,
		effort: ClampEffort(model, req.Effort), schema: schema, unknown: &e.unknown, cfg: &e.cfg, confined: confine != nil}
	reusable, err := t.run(ctx)
	e.Procs.Release(c, req.SessionID, reusable && warm)
	return err
}

// start starts an app-server in dir, confined by confine, and initializes
// the session.
func (e *Engine) start(ctx context.Context, h home, cred Credential, dir, spec string, confine *engine.Confinement) (*conn, error) {
	argv := e.cfg.Argv("app-server")
	c, err := startConn(argv, h.environ(cred), dir, e.cfg.KillGrace, e.cfg.Tap, confine)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindNotInstalled, Msg: "start codex app-server: " + err.Error(), Err: err}
	}
	c.spec = spec
	e.Procs.Started()
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err = c.call(ictx, "initialize", map[string]any{"clientInfo": map[string]any{"name": "clopen", "title": "Clopen",
		"version": "1"}, "capabilities": nil})
	if err == nil {
		err = c.notify("initialized", nil)
	}
	if err != nil {
		c.Stop(context.Background())
		if err == errClosed {
			return nil, exitError(c.Err(), c.Stderr())
		}
		return nil, &engine.Error{Kind: events.KindCrashed, Msg: "initialize codex app-server: " + err.Error(), Err: err}
	}
	return c, nil
}
