// Package pi drives the pi coding agent (@mariozechner/pi-coding-agent) in
// its RPC mode: JSON commands on stdin, events on stdout, one process per
// chat, kept warm between the chat's turns.
//
// A turn puts pi on a session (new_session; a resume clones the session it
// resumes, after switch_session when pi is elsewhere, so every turn reports
// a new session and the resumed one stays as it was), sets the model and
// thinking level, sends the prompt and converts the events until
// agent_end. Sessions live per project under the instance's state dir.
//
// pi has no permission system and no question tool; Clopen's extension
// (extension/clopen.ts, loaded with -e) adds both over the RPC mode's
// extension UI dialogs: every tool call waits for Interaction.Permit, and
// an AskUserQuestion tool asks Interaction.AskUser. An interrupt is pi's
// abort (the session stays usable); a cancel aborts and stops the process
// group. pi has no MCP client (by design); the extension connects the
// request's MCP servers (streamable HTTP) and offers their tools as
// mcp__<server>__<tool>.
package pi

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Config configures the adapter.
type Config struct {
	// Process: Bin is the pi executable; StateDir holds each instance's
	// HOME, agent dir and sessions: StateDir/<tenant>/<account>. A
	// request's ConfigDir, when set, is the agent dir instead.
	engine.Process
	// Credentials gives each process its credentials; required.
	Credentials Credentials
	// Retry keeps pi's automatic retry of failed model calls (overloaded,
	// rate limited, 5xx) on.
	Retry bool
}

// Engine is the pi adapter for one (tenant, account). Run is safe for
// concurrent use; each chat has its own process.
type Engine struct {
	engine.CLI[*conn] // a warm pi per chat
	cfg               Config
	key               engine.Key
	unknown           sync.Map // event types logged as unknown (once each)
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
	return &Engine{cfg: cfg, key: key, CLI: engine.NewCLI(engine.CLIConfig[*conn]{Engine: events.EnginePi, Key: key,
		Logger: cfg.Logger, IdleTimeout: cfg.IdleTimeout,
		// pi prints its version on stderr.
		Version: engine.VersionCommand{Bin: cfg.Bin, Env: []string{"PI_OFFLINE=1"}, Stderr: true, Timeout: 20 * time.Second}})}
}

// Type reports events.EnginePi.
func (e *Engine) Type() events.EngineType { return events.EnginePi }

// Run runs one turn; see the package doc. It returns nil when the turn
// ended with a result (interrupted ones included), the classified error of
// a failed turn or a dead process, or the cancel cause after a cancel.
func (e *Engine) Run(ctx context.Context, req engine.Request, emit engine.Emit) error {
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return err
	}
	if cred, err = route(e.cfg.Sandbox, e.key.Tenant, req.SessionID, cred); err != nil {
		return err
	}
	model := cmp.Or(req.Model, DefaultModel)
	h := newHome(e.cfg.StateDir, e.key.Tenant, e.key.Account, req.ConfigDir)
	if err := h.prepare(cred, model, req.ProjectID); err != nil {
		return err
	}
	confine, err := e.cfg.Sandbox.For(e.key.Tenant, e.cfg.Bin, req.Workspace, cred.BaseURL, h.state()...)
	if err != nil {
		return err
	}
	// A warm pi fits only a turn it would have been confined for the same
	// way: never another tenant's, workspace's or state's.
	spec := strings.Join([]string{cred.fingerprint(), h.agentDir, req.ProjectID, req.Workspace,
		mcpFingerprint(req.MCPServers), string(policyJSON(req)), confine.Fingerprint()}, "\x00")
	if cred.API == APIOpenAICompletions {
		spec += "\x00" + model // models.json lists the model
	}
	warm := e.cfg.IdleTimeout > 0 && !req.Ephemeral
	var c *conn
	if warm {
		// Sessions live in files, not in the process: the turn clones the
		// session it resumes (switching to it first when pi is on another),
		// so the chat's warm pi, started the same way (credentials, agent
		// dir, project, workspace, MCP servers, policy, confinement), only skips pi's
		// start-up of about a second.
		if idle, ok := e.Procs.Take(req.SessionID, func(c *conn) bool { return c.spec == spec }); ok {
			c = idle
		}
	}
	if c == nil {
		if c, err = e.start(ctx, h, cred, model, req, spec, confine); err != nil {
			return err
		}
	}
	if !e.Procs.Use(c) {
		c.Stop(context.Background())
		return engine.ShuttingDown("pi")
	}
	t := &turn{c: c, req: req, emit: emit, log: e.Log.With("run_id", req.RunID), cfg: &e.cfg, unknown: &e.unknown,
		model: model, provider: cred.provider(), sessions: h.sessions(req.ProjectID)}
	reusable, err := t.run(ctx)
	e.Procs.Release(c, req.SessionID, reusable && warm)
	return err
}

// start starts pi in the workspace with Clopen's extension and the
// project's sessions dir (no session at all for an ephemeral turn),
// confined by confine.
func (e *Engine) start(ctx context.Context, h home, cred Credential, model string, req engine.Request, spec string, confine *engine.Confinement) (*conn, error) {
	sessions := []string{"--session-dir", h.sessions(req.ProjectID)}
	if req.Ephemeral {
		sessions = []string{"--no-session"}
	}
	argv := e.cfg.Argv(append([]string{"--mode", "rpc"}, sessions...)...)
	argv = append(argv, "-e", h.extension(), "--provider", cred.provider(), "--model", model)
	env := append(h.environ(cred), "CLOPEN_PI_POLICY="+string(policyJSON(req)))
	list, status, err := h.mcpFiles(req.MCPServers)
	if err != nil {
		return nil, fmt.Errorf("pi MCP servers: %w", err)
	}
	if list != "" {
		env = append(env, "CLOPEN_PI_MCP="+list, "CLOPEN_PI_MCP_STATUS="+status)
		defer os.Remove(status)
	}
	c, err := startConn(argv, env, req.Workspace, e.cfg.KillGrace, e.cfg.Tap, confine)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindNotInstalled, Msg: "start pi: " + err.Error(), Err: err}
	}
	c.spec = spec
	e.Procs.Started()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	if _, err := c.call(sctx, map[string]any{"type": "set_auto_retry", "enabled": e.cfg.Retry}); err != nil {
		c.Stop(context.Background())
		if err == errClosed {
			return nil, exitError(c.Err(), c.Stderr())
		}
		return nil, &engine.Error{Kind: events.KindCrashed, Msg: "start pi: " + err.Error(), Err: err}
	}
	c.mcp = mcpStatus(req.MCPServers, status)
	return c, nil
}

// policyJSON is the run's permission policy as the extension reads it.
func policyJSON(req engine.Request) []byte {
	return mustJSON(map[string][]string{"allowed": req.Permissions.Allow, "denied": req.Permissions.Deny})
}
