// Package acp drives coding agents over the Agent Client Protocol (ACP v1:
// JSON-RPC 2.0 over newline-delimited stdio) and converts what they say
// into the events contract. One client serves every ACP agent; a Profile
// holds each agent's command line, credentials, hermetic settings and
// quirks: Gemini CLI, Qwen Code, Copilot CLI, OpenCode, Cline, Cursor's
// agent, and any agent an operator configures.
//
// A turn is session/prompt on an ACP session. The session is new, or the
// one the request resumes: still open in a warm process, else reopened
// with session/resume or session/load (whichever the agent advertises; a
// load's history replay is not re-emitted), forked first with session/fork
// where advertised. An agent that can do none of these starts a new
// session, and the turn opens with a notification saying the agent cannot
// see the earlier history.
//
// session/request_permission goes to the run's Interaction and is answered
// with the agent's allow-once or reject-once option; fs/read_text_file and
// fs/write_text_file are served inside the workspace only. An interrupt is
// session/cancel: the agent ends the prompt with stopReason cancelled, the
// turn ends with an interrupted result, and the process stays warm. A
// cancel also sends session/cancel, then stops the process group.
//
// Warm processes: an agent process serves one turn at a time and, after
// it, waits idle for the next turn of the same (tenant, account,
// workspace, model) until IdleTimeout, keeping its sessions open: agents
// take 1-7 s to start, and a warm process answers at once.
//
// Why not github.com/coder/acp-go-sdk (v0.13.0, which does decode every
// message the agents sent in the reference captures): its connection queues
// at most 1,024 unprocessed notifications and closes the connection past
// that, and Emit may block while the publisher catches up, so a 2,000-delta
// answer would cut the turn off; and its SessionUpdate decoder matches an
// unknown kind to a known one by field shape (a future kind with "content"
// would decode as user_message_chunk), where unknown kinds must be ignored.
// The client here is small: an unbounded inbox, raw rawInput/_meta for
// the per-agent code, and only the fields it uses.
package acp

import (
	"path/filepath"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// DefaultStartTimeout is Config.StartTimeout's default.
const DefaultStartTimeout = 90 * time.Second

// Config configures an adapter instance.
type Config struct {
	// Process: Bin is the agent's executable; StateDir holds each
	// instance's HOME: StateDir/<tenant>/<account>.
	engine.Process
	// Profile is the agent; required.
	Profile *Profile
	// CacheDir is shared by every instance (Copilot unpacks 235 MB there
	// on first run); empty means StateDir/.cache.
	CacheDir string
	// Credentials gives each process its credentials; required.
	Credentials Credentials
	// DefaultModel is the model of a turn that names none, and the model
	// the catalog is read with; empty means the profile's DefaultModel.
	// Agents that report no models (Copilot with a provider key) list it
	// as their catalog.
	DefaultModel string
	// Env is added to the agent's environment (KEY=value).
	Env []string
	// MaxRetries is how often an agent that can be told so retries a
	// failed model call; 0 means never.
	MaxRetries int
	// RetryBudget is how long a turn lets the agent retry failed model
	// calls (seen in its retry output) before it gives up with the status;
	// 0 means engine.DefaultRetryBudget.
	RetryBudget time.Duration
	// StartTimeout bounds an agent's start-up (initialize).
	StartTimeout time.Duration
}

// Engine is the adapter instance of one agent for one (tenant, account).
// Run is safe for concurrent use: each turn has a process of its own.
type Engine struct {
	engine.CLI[*agent] // warm processes by how they were started, their sessions open
	cfg                Config
	p                  *Profile
	key                engine.Key
	home               string

	mu      sync.Mutex
	owner   map[string]*agent        // ACP session id → the process that has it open
	specs   map[string]chatSpecs     // chat → the launch specs of its turns' processes
	inTurn  map[string]chan struct{} // sessions a turn is using, closed when it ends
	unknown sync.Map                 // update kinds and lines already reported
}

// Stats counts what an instance did with its processes.
type Stats = engine.Stats

var (
	_ engine.Engine    = (*Engine)(nil)
	_ engine.Versioned = (*Engine)(nil)
	_ engine.Disposer  = (*Engine)(nil)
	_ engine.Cataloger = (*Engine)(nil)
)

// New returns the adapter instance of key.
func New(cfg Config, key engine.Key) *Engine {
	cfg.Defaults()
	if cfg.RetryBudget <= 0 {
		cfg.RetryBudget = engine.DefaultRetryBudget
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = cfg.Profile.DefaultModel
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = filepath.Join(cfg.StateDir, ".cache")
	}
	idle := cfg.IdleTimeout
	if cfg.Profile.SingleTurn {
		idle = -1 // its process serves one turn: none is kept warm
	}
	e := &Engine{cfg: cfg, p: cfg.Profile, key: key, home: engine.StateDir(cfg.StateDir, key.Tenant, key.Account),
		owner: map[string]*agent{}, inTurn: map[string]chan struct{}{}, specs: map[string]chatSpecs{}}
	e.CLI = engine.NewCLI(engine.CLIConfig[*agent]{Engine: cfg.Profile.Type, Key: key, Logger: cfg.Logger,
		IdleTimeout: idle, Version: engine.VersionCommand{Bin: cfg.Bin, Timeout: 20 * time.Second},
		// Keyed by launch spec: any warm process started the same way can
		// serve a turn, the one with the resumed session open first. A
		// retired one gets to save its sessions.
		Procs: engine.ProcsOptions[*agent]{Shared: true, Retire: func(a *agent) {
			e.forgetSessions(a)
			a.p.Retire(e.cfg.KillGrace)
		}}})
	return e
}

// Type reports the profile's engine type.
func (e *Engine) Type() events.EngineType { return e.p.Type }

// RetriesSilently is engine.SilentRetrier: the profile's SilentRetries.
func (e *Engine) RetriesSilently() bool { return e.p.SilentRetries }
