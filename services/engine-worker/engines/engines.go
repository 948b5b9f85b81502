// Package engines is the table of agent CLIs a worker can install and run:
// which npm packages at which exact version, where the executable lands, how
// to read its version, and how to build the worker's adapter from an
// install. `clopen engines install|doctor` and the worker's start-up read it;
// a worker offers only the engines that Check finds ready.
//
// Installs live in <engines dir>/<engine>/<version>, one directory per
// pinned version, so an upgrade never disturbs a running worker and a stale
// install is simply not used.
package engines

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/mcpproxy"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// Package is an npm package at an exact version.
type Package = engine.Package

// Spec is one installable engine: a row of the table.
type Spec struct {
	Type events.EngineType
	// Pin is the release and its install, as the adapter exports it; an
	// engine Clopen does not install has no Packages.
	engine.Pin
	// Layout is where the engine reads Clopen's artifacts, as the adapter
	// declares it: the worker places each run's content through it.
	Layout plan.Layout
	// Account reports why no account is configured, nil when one is.
	Account func(ctx context.Context, s Setup) error
	// ModelServer is the base URL the worker's own credentials point the
	// engine at, "" for its provider's own address; Diagnose checks that
	// it answers.
	ModelServer func(ctx context.Context, s Setup) string
	// Factory builds the worker's adapter instances from the install's
	// executable.
	Factory func(bin string, s Setup) engine.Factory
	// External, when set, finds an engine Clopen does not install (no
	// Packages): its executable, or an error wrapping ErrNotInstalled.
	External func(s Setup) (string, error)
	// Untested marks an engine whose adapter never ran against the real
	// CLI; doctor says so.
	Untested bool
}

// table is every installable engine, each row built from its adapter's
// Pin and Layout.
var table = append([]Spec{
	{
		Type:   events.EngineClaudeCode,
		Pin:    claude.Pin(),
		Layout: claude.Layout(),
		Account: func(ctx context.Context, s Setup) error {
			_, err := s.claudeCredentials().Credential(ctx, "", "")
			return err
		},
		ModelServer: func(ctx context.Context, s Setup) string {
			c, _ := s.claudeCredentials().Credential(ctx, "", "")
			return c.BaseURL
		},
		Factory: func(bin string, s Setup) engine.Factory {
			creds := claudeAccounts{s}
			return func(_ context.Context, key engine.Key) (engine.Engine, error) {
				return claude.New(claude.Config{Process: engine.Process{Bin: bin, StateDir: s.stateDir(events.EngineClaudeCode), Logger: s.Logger, Sandbox: s.Sandbox}, Credentials: creds, MaxRetries: 2}, key), nil
			}
		},
	},
	codexRow, // codex.go
	piRow,    // pi.go
}, acpSpecs...) // acp.go

// ClaudeCodeVersion is the pinned Claude Code release (claude.Version).
const ClaudeCodeVersion = claude.Version

// All returns the table.
func All() []Spec { return append([]Spec(nil), table...) }

// Lookup returns the row of an engine.
func Lookup(t events.EngineType) (Spec, bool) {
	for _, s := range table {
		if s.Type == t {
			return s, true
		}
	}
	return Spec{}, false
}

// Dir is where the pinned version installs under enginesDir.
func (s Spec) Dir(enginesDir string) string {
	return filepath.Join(enginesDir, string(s.Type), s.Version)
}

// BinPath is the executable of the pinned install under enginesDir.
func (s Spec) BinPath(enginesDir string) string {
	return filepath.Join(s.Dir(enginesDir), filepath.FromSlash(s.Bin))
}

// Setup says where engines are installed, where they keep state and where
// their credentials come from.
type Setup struct {
	// DataDir is Clopen's data dir: engines install into DataDir/engines
	// unless EnginesDir says otherwise, and keep state in
	// DataDir/engine-state.
	DataDir string
	// EnginesDir overrides the install root ($CLOPEN_ENGINES_DIR).
	EnginesDir string
	// Getenv reads the worker's configuration (credentials); nil reads none.
	Getenv func(string) string
	// LLMBaseURL points every engine at this model server instead of its
	// provider (`clopen dev --fakellm`); it wins over CLOPEN_LLM_BASE_URL.
	LLMBaseURL string
	// Accounts, when set, gives each engine process its tenant's account
	// (the named one, else the tenant's active one); a tenant without one
	// gets needs-account, unless OperatorCredentials.
	Accounts Accounts
	// OperatorCredentials lends the worker's own credentials (its
	// environment) to tenants without an account of their own
	// (CLOPEN_OPERATOR_CREDENTIALS=1). Off by default: an operator's key
	// serves tenants only when the operator says so. `clopen dev` turns it
	// on for its one user.
	OperatorCredentials bool
	// NoSandbox is why there is no working sandbox for agent processes
	// (Sandboxing failed): then Offer offers no agent engine at all, only
	// the scripted engine runs, and the error says what to fix.
	NoSandbox error
	// Sandbox confines the agent processes (see Sandboxing); nil runs them
	// unconfined.
	Sandbox *engine.Sandboxing
	// Logger gets the adapters' diagnostics.
	Logger *slog.Logger
	// ProbeTimeout bounds each engine's version command; 0 means
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// StartupProbeTimeout bounds them at a worker's start (Offer), so a
	// slow CLI does not hold up the start; 0 means DefaultStartupProbeTimeout.
	StartupProbeTimeout time.Duration
}

// EnvOperatorCredentials, set to 1, lends the worker's own credentials to
// tenants without an account.
const EnvOperatorCredentials = "CLOPEN_OPERATOR_CREDENTIALS"

// SetupFromEnv returns the setup of a worker whose data dir is dataDir,
// reading CLOPEN_ENGINES_DIR and credentials from getenv.
func SetupFromEnv(dataDir string, getenv func(string) string, logger *slog.Logger) Setup {
	return Setup{DataDir: dataDir, EnginesDir: getenv("CLOPEN_ENGINES_DIR"), Getenv: getenv, Logger: logger,
		OperatorCredentials: getenv(EnvOperatorCredentials) == "1"}
}

// DefaultDataDir is Clopen's data dir as `clopen` finds it: $CLOPEN_DATA,
// else $XDG_DATA_HOME/clopen, else ~/.local/share/clopen.
func DefaultDataDir(getenv func(string) string) string {
	if d := getenv("CLOPEN_DATA"); d != "" {
		return d
	}
	base := getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "clopen")
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "clopen")
}

// ModelProxies returns the model proxies of the setup's sandbox, which
// meter each run (worker.Deps.Proxies); nil for a nil setup, unconfined
// agents, or none.
func (s *Setup) ModelProxies() *modelproxy.Pool {
	if s == nil {
		return nil
	}
	return s.Sandbox.ModelProxies()
}

// MCPProxy is the MCP proxy of the confined agents, nil when unconfined.
func (s *Setup) MCPProxy() *mcpproxy.Proxy {
	if s == nil {
		return nil
	}
	return s.Sandbox.MCPProxy()
}

// Root is the install root.
func (s Setup) Root() string {
	if s.EnginesDir != "" {
		return s.EnginesDir
	}
	return filepath.Join(s.DataDir, "engines")
}

func (s Setup) stateDir(t events.EngineType) string {
	return filepath.Join(s.DataDir, "engine-state", string(t))
}

func (s Setup) getenv(k string) string {
	if s.Getenv == nil {
		return ""
	}
	return s.Getenv(k)
}

func (s Setup) claudeCredentials() claude.EnvCredentials {
	return claude.EnvCredentials{Getenv: s.getenv, BaseURL: s.LLMBaseURL}
}

// NPMCache is npm's cache dir for installs: $CLOPEN_NPM_CACHE, else
// ~/.cache/clopen/npm, kept between runs so reinstalls (CI) are fast.
func NPMCache(getenv func(string) string) string {
	if d := getenv("CLOPEN_NPM_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "clopen", "npm")
	}
	return filepath.Join(os.TempDir(), "clopen-npm-cache")
}
