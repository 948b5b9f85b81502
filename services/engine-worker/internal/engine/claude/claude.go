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
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Provider is the provider id messages carry.
const Provider = "anthropic"

// Defaults of Config.
const (
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultKillGrace      = 2 * time.Second
	DefaultInterruptGrace = 10 * time.Second
	DefaultCancelGrace    = 250 * time.Millisecond
)

// Config configures the adapter.
type Config struct {
	// Bin is the claude executable of the pinned install.
	Bin string
	// StateDir holds each instance's HOME and CLAUDE_CONFIG_DIR:
	// StateDir/<tenant>/<account>.
	StateDir string
	// Credentials gives each process its credentials; required.
	Credentials Credentials
	// Wrap prefixes the command line, e.g. a namespace launcher in tests
	// ("ip", "netns", "exec", NS, "unshare", "-p", "-f", "--mount-proc", "--").
	Wrap []string
	// Env is added to the CLI's environment (KEY=value), for settings the
	// adapter does not set itself, such as ENABLE_TOOL_SEARCH.
	Env []string
	// MaxRetries is CLAUDE_CODE_MAX_RETRIES, the CLI's retries of a failed
	// model call; 0 means none.
	MaxRetries int
	// IdleTimeout retires a warm process unused this long: 0 means
	// DefaultIdleTimeout; a negative value turns warm processes off.
	IdleTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL of a stopped
	// process group; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// InterruptGrace is how long an interrupted turn waits for the CLI to end
	// it before the process is stopped; 0 means DefaultInterruptGrace.
	InterruptGrace time.Duration
	// CancelGrace is how long a cancelled turn's CLI gets, after the
	// interrupt, to end the turn (saving its session) before its process
	// group is stopped; 0 means DefaultCancelGrace.
	CancelGrace time.Duration
	// Logger gets the adapter's diagnostics; nil discards them.
	Logger *slog.Logger
	// Tap, when set, sees every line written to (sent) or read from a
	// process, for recording transcripts. It must not block.
	Tap func(sent bool, line []byte)
}

// Engine is the Claude Code adapter for one (tenant, account). Run is safe
// for concurrent use; each turn has its own process.
type Engine struct {
	cfg  Config
	key  engine.Key
	home string
	log  *slog.Logger

	mu       sync.Mutex
	spares   map[string]*spare // warm processes by chat session
	gens     map[string]uint64 // turns started per chat session
	active   map[*proc]struct{}
	bg       sync.WaitGroup // retiring old processes, starting warm ones
	disposed bool
	version  string
	stats    Stats
	unknown  sync.Map // stdout line types logged as unknown (once each)
}

// Stats counts what an instance did with its processes.
type Stats struct {
	Started  int // processes started, warm ones included
	WarmHits int // turns that ran on a warm process
}

// Stats returns the instance's counters, for tests and metrics.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

var (
	_ engine.Engine    = (*Engine)(nil)
	_ engine.Versioned = (*Engine)(nil)
	_ engine.Disposer  = (*Engine)(nil)
)

// New returns the adapter instance of key.
func New(cfg Config, key engine.Key) *Engine {
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.InterruptGrace <= 0 {
		cfg.InterruptGrace = DefaultInterruptGrace
	}
	if cfg.CancelGrace <= 0 {
		cfg.CancelGrace = DefaultCancelGrace
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{cfg: cfg, key: key, home: stateDir(cfg.StateDir, key.Tenant, key.Account),
		log:    log.With("engine", events.EngineClaudeCode, "tenant", key.Tenant),
		spares: map[string]*spare{}, gens: map[string]uint64{}, active: map[*proc]struct{}{}}
}

// Type reports events.EngineClaudeCode.
func (e *Engine) Type() events.EngineType { return events.EngineClaudeCode }

// Version runs `claude --version` once and reports its version number.
func (e *Engine) Version(ctx context.Context) (string, error) {
	e.mu.Lock()
	v := e.version
	e.mu.Unlock()
	if v != "" {
		return v, nil
	}
	v, err := ReadVersion(ctx, e.cfg.Bin)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	e.version = v
	e.mu.Unlock()
	return v, nil
}

// ReadVersion runs `bin --version`, which prints "2.1.332 (Claude Code)".
func ReadVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = []string{"PATH=" + cmp.Or(os.Getenv("PATH"), defaultPath), "HOME=" + os.TempDir(), "DISABLE_AUTOUPDATER=1"}
	out, err := cmd.Output()
	if err != nil {
		return "", &engine.Error{Kind: events.KindNotInstalled, Msg: fmt.Sprintf("claude --version: %v", err), Err: err}
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return "", &engine.Error{Kind: events.KindNotInstalled, Msg: "claude --version printed nothing"}
	}
	return f[0], nil
}

// Run runs one turn; see the package doc. It returns nil when the turn
// ended with a result (interrupted ones included), the classified error of
// a failed result or a crashed process, or the cancel cause after a cancel.
func (e *Engine) Run(ctx context.Context, req engine.Request, emit engine.Emit) error {
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		return fmt.Errorf("claude state dir: %w", err)
	}
	model := cmp.Or(req.Model, DefaultModel)
	args, err := cliArgs(model, ClampLevel(model, req.Effort), req.MCPServers, req.Permissions)
	if err != nil {
		return &engine.Error{Kind: events.KindInvalidRequest, Msg: err.Error(), Err: err}
	}
	env := append(environ(e.home, cred, e.cfg.MaxRetries), e.cfg.Env...)
	spec := specOf(args, req.Workspace, cred)
	gen := e.begin(req.SessionID)
	p := e.takeSpare(req.SessionID, req.ResumeSessionID, spec)
	if p == nil {
		if p, err = e.start(args, env, req.Workspace, req.ResumeSessionID, spec); err != nil {
			return err
		}
	}
	e.track(p, true)
	t := &turn{p: p, req: req, emit: emit, log: e.log.With("run_id", req.RunID), conv: Converter{Model: model},
		toolUses: map[string]bool{}, unknown: &e.unknown, interruptGrace: e.cfg.InterruptGrace, cancelGrace: e.cfg.CancelGrace}
	out, err := t.run(ctx)
	e.track(p, false)
	e.background(func() {
		if out.result && out.session != "" && e.cfg.IdleTimeout > 0 {
			e.respawn(p, req.SessionID, gen, out.session, args, env, req.Workspace, spec)
			return
		}
		e.forget(req.SessionID, gen)
		p.Retire(e.cfg.KillGrace)
	})
	return err
}

// start starts a process (resuming and forking resume, if set) and sends
// the initialize request.
func (e *Engine) start(args, env []string, dir, resume, spec string) (*proc, error) {
	argv := append(append(append([]string{}, e.cfg.Wrap...), e.cfg.Bin), args...)
	if resume != "" {
		argv = append(argv, "--resume", resume, "--fork-session")
	}
	p, err := startProc(argv, env, dir, e.cfg.KillGrace, e.cfg.Tap)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindNotInstalled, Msg: "start Claude Code: " + err.Error(), Err: err}
	}
	p.spec, p.resume = spec, resume
	e.mu.Lock()
	e.stats.Started++
	e.mu.Unlock()
	if _, err := p.control(map[string]any{"subtype": "initialize", "hooks": nil}); err != nil {
		p.Stop(context.Background())
		return nil, &engine.Error{Kind: events.KindCrashed, Msg: "initialize Claude Code: " + err.Error(), Err: err}
	}
	return p, nil
}

// background runs f in a goroutine Dispose waits for; after Dispose it
// runs nothing.
func (e *Engine) background(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.disposed {
		go f() // only ever a retire: it ends on its own
		return
	}
	e.bg.Add(1)
	go func() { defer e.bg.Done(); f() }()
}

// track records the processes a turn is using, for Dispose.
func (e *Engine) track(p *proc, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if on {
		e.active[p] = struct{}{}
	} else {
		delete(e.active, p)
	}
}

// Dispose stops every process of the instance, busy or warm, and waits for
// them (or ctx).
func (e *Engine) Dispose(ctx context.Context) error {
	e.mu.Lock()
	e.disposed = true
	var all []*proc
	for chat, s := range e.spares {
		s.timer.Stop()
		all = append(all, s.p)
		delete(e.spares, chat)
	}
	for p := range e.active {
		all = append(all, p)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); e.bg.Wait() }()
	return engine.Wait(ctx, &wg)
}
