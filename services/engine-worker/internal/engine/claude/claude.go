// Package claude drives the Claude Code CLI in its bidirectional stream-json
// mode (the protocol the Agent SDK speaks), one process per turn or warm
// between turns, and converts its output into the events contract.
//
// A turn writes the prompt as a user line and relays the CLI's stdout until
// the turn's result. Permission prompts (can_use_tool) go to the run's
// Interaction; AskUserQuestion is answered through updatedInput.answers. An
// interrupt is the CLI's own control_request interrupt; a cancel also stops
// the process group. Every resume forks (--resume ID --fork-session), so each
// turn reports a new engine session and the one it resumed stays as it was.
//
// Warm processes: right after a turn, the adapter starts the process for the
// chat's next turn (resuming and forking the session the turn ended in) and
// keeps it idle until that turn comes or IdleTimeout passes. A follow-up
// turn then skips the CLI's start-up; see docs/PERFORMANCE.md for why the
// process is not simply reused (it would continue the session in place).
package claude

import (
	"cmp"
	"context"
	"sync"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Provider is the provider id messages carry.
const Provider = "anthropic"

// Config configures the adapter.
type Config struct {
	// Process: Bin is the claude executable; StateDir holds each
	// instance's HOME and CLAUDE_CONFIG_DIR: StateDir/<tenant>/<account>.
	// A request's ConfigDir, when set, is the CLAUDE_CONFIG_DIR instead.
	engine.Process
	// Credentials gives each process its credentials; required.
	Credentials Credentials
	// Env is added to the CLI's environment (KEY=value), for settings the
	// adapter does not set itself, such as ENABLE_TOOL_SEARCH.
	Env []string
	// MaxRetries is CLAUDE_CODE_MAX_RETRIES, the CLI's retries of a failed
	// model call; 0 means none.
	MaxRetries int
}

// Engine is the Claude Code adapter for one (tenant, account). Run is safe
// for concurrent use; each turn has its own process.
type Engine struct {
	engine.CLI[*proc] // a warm process per chat, pre-forked after each turn
	cfg               Config
	key               engine.Key
	home              string
	unknown           sync.Map // stdout line types logged as unknown (once each)
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
	e := &Engine{cfg: cfg, key: key, home: engine.StateDir(cfg.StateDir, key.Tenant, key.Account)}
	e.CLI = engine.NewCLI(engine.CLIConfig[*proc]{Engine: events.EngineClaudeCode, Key: key, Logger: cfg.Logger,
		IdleTimeout: cfg.IdleTimeout,
		// A retired process gets EOF and time to exit by itself, so that
		// its session file is complete (before a spare resumes it).
		Procs:   engine.ProcsOptions[*proc]{Retire: func(p *proc) { p.Retire(cfg.KillGrace) }},
		Version: engine.VersionCommand{Bin: cfg.Bin, Env: []string{"DISABLE_AUTOUPDATER=1"}}})
	return e
}

// Type reports events.EngineClaudeCode.
func (e *Engine) Type() events.EngineType { return events.EngineClaudeCode }

// Run runs one turn; see the package doc. It returns nil when the turn
// ended with a result (interrupted ones included), the classified error of
// a failed result or a crashed process, or the cancel cause after a cancel.
func (e *Engine) Run(ctx context.Context, req engine.Request, emit engine.Emit) error {
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return err
	}
	if cred, err = e.route(cred, req.SessionID); err != nil {
		return err
	}
	d := e.dirs(req.ConfigDir)
	if err := d.make(); err != nil {
		return err
	}
	model := cmp.Or(req.Model, DefaultModel)
	args, err := cliArgs(model, ClampLevel(model, req.Effort), req.MCPServers, req.Permissions)
	if err != nil {
		return &engine.Error{Kind: events.KindInvalidRequest, Msg: err.Error(), Err: err}
	}
	env := append(environ(d, cred, e.cfg.MaxRetries), e.cfg.Env...)
	confine, err := e.cfg.Sandbox.For(e.key.Tenant, e.cfg.Bin, req.Workspace, cred.BaseURL, d.state()...)
	if err != nil {
		return err
	}
	// A warm process fits only a turn it would have been confined for the
	// same way: never another tenant's, workspace's or state's.
	spec := specOf(args, req.Workspace, cred) + "\x00" + confine.Fingerprint()
	gen := e.Procs.Begin(req.SessionID)
	// The chat's spare fits when it resumes the session this turn resumes
	// and was started the same way.
	p, ok := e.Procs.Take(req.SessionID, func(p *proc) bool {
		return req.ResumeSessionID != "" && p.resume == req.ResumeSessionID && p.spec == spec
	})
	if !ok {
		if p, err = e.start(args, env, req.Workspace, req.ResumeSessionID, spec, confine); err != nil {
			return err
		}
	}
	if !e.Procs.Use(p) {
		p.Stop(context.Background())
		return engine.ShuttingDown("Claude Code")
	}
	t := &turn{p: p, req: req, emit: emit, log: e.Log.With("run_id", req.RunID), conv: Converter{Model: model},
		toolUses: map[string]bool{}, unknown: &e.unknown, interruptGrace: e.cfg.InterruptGrace, cancelGrace: e.cfg.CancelGrace}
	out, err := t.run(ctx)
	// The spare resumes and forks the session the turn ended in.
	var next func() (*proc, error)
	if out.result && out.session != "" {
		next = func() (*proc, error) {
			p, err := e.start(args, env, req.Workspace, out.session, spec, confine)
			if err != nil {
				e.Log.Warn("claude: start warm process", "err", err)
			}
			return p, err
		}
	}
	e.Procs.Respawn(p, req.SessionID, gen, next)
	return err
}

// start starts a process (resuming and forking resume, if set) and sends
// the initialize request.
func (e *Engine) start(args, env []string, dir, resume, spec string, confine *engine.Confinement) (*proc, error) {
	argv := e.cfg.Argv(args...)
	if resume != "" {
		argv = append(argv, "--resume", resume, "--fork-session")
	}
	p, err := startProc(argv, env, dir, e.cfg.KillGrace, e.cfg.Tap, confine)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindNotInstalled, Msg: "start Claude Code: " + err.Error(), Err: err}
	}
	p.spec, p.resume = spec, resume
	e.Procs.Started()
	if _, err := p.control(map[string]any{"subtype": "initialize", "hooks": nil}); err != nil {
		p.Stop(context.Background())
		return nil, &engine.Error{Kind: events.KindCrashed, Msg: "initialize Claude Code: " + err.Error(), Err: err}
	}
	return p, nil
}
