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
	"log/slog"
	"strings"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Config configures the adapter.
type Config struct {
	// Sandbox is how processes are confined; nil runs them unconfined.
	// Confined, the credential goes through the model proxy (see
	// engine.Sandboxing.Route).
	Sandbox *engine.Sandboxing
	// Bin is the codex executable of the pinned install (the native binary).
	Bin string
	// StateDir holds each instance's HOME, CODEX_HOME and TMPDIR:
	// StateDir/<tenant>/<account>. A request's ConfigDir, when set, is the
	// CODEX_HOME instead.
	StateDir string
	// Credentials gives each app-server its credentials; required.
	Credentials Credentials
	// Wrap prefixes the command line, e.g. a namespace launcher in tests.
	Wrap []string
	// MaxRetries is the provider's request and stream retries; 0 means none.
	MaxRetries int
	// IdleTimeout retires an app-server its chat has not used this long: 0
	// means engine.DefaultIdleTimeout; a negative value turns warm processes off.
	IdleTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL of a stopped
	// process group; 0 means engine.DefaultKillGrace.
	KillGrace time.Duration
	// InterruptGrace is how long an interrupted turn waits for codex to end
	// it before the process is stopped; 0 means engine.DefaultInterruptGrace.
	InterruptGrace time.Duration
	// CancelGrace is how long a cancelled turn's app-server gets, after the
	// interrupt, before its group is stopped; 0 means engine.DefaultCancelGrace.
	CancelGrace time.Duration
	// Logger gets the adapter's diagnostics; nil discards them.
	Logger *slog.Logger
	// Tap, when set, sees every line written to (sent) or read from an
	// app-server, for recording transcripts. It must not block.
	Tap func(sent bool, line []byte)
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
	engine.SetDefaults(&cfg.IdleTimeout, &cfg.KillGrace, &cfg.InterruptGrace, &cfg.CancelGrace)
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
	if cred, err = route(e.cfg.Sandbox, e.key.Tenant, cred); err != nil {
		return err
	}
	h := newHome(e.cfg.StateDir, e.key.Tenant, e.key.Account, req.ConfigDir)
	if err := h.prepare(cred, e.cfg.MaxRetries); err != nil {
		return err
	}
	spec := strings.Join([]string{cred.fingerprint(), h.codexHome, req.Workspace}, "\x00")
	warm := e.cfg.IdleTimeout > 0 && !req.Ephemeral
	var c *conn
	if warm {
		// Threads live in CODEX_HOME, not in the process, so the turn (which
		// forks the thread it resumes) runs on the chat's warm app-server as
		// well as on a fresh one, when it was started the same way
		// (credentials, CODEX_HOME, workspace); it only skips the start.
		if idle, ok := e.Procs.Take(req.SessionID, func(c *conn) bool { return c.spec == spec }); ok {
			c = idle
		}
	}
	if c == nil {
		if c, err = e.start(ctx, h, cred, req.Workspace, spec); err != nil {
			return err
		}
	}
	if !e.Procs.Use(c) {
		c.Stop(context.Background())
		return engine.ShuttingDown("codex")
	}
	t := &turn{c: c, req: req, emit: emit, log: e.Log.With("run_id", req.RunID), model: model,
		effort: ClampEffort(model, req.Effort), schema: schema, unknown: &e.unknown, cfg: &e.cfg}
	reusable, err := t.run(ctx)
	e.Procs.Release(c, req.SessionID, reusable && warm)
	return err
}

// start starts an app-server in dir and initializes the session.
func (e *Engine) start(ctx context.Context, h home, cred Credential, dir, spec string) (*conn, error) {
	argv := append(append(append([]string{}, e.cfg.Wrap...), e.cfg.Bin), "app-server")
	c, err := startConn(argv, h.environ(cred), dir, e.cfg.KillGrace, e.cfg.Tap)
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
