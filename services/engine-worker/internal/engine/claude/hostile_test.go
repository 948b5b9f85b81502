package claude_test

import (
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// newHostileWorker is a worker confining Claude Code as the worker does:
// model proxies holding the tenants' keys, and limits low enough for a
// fork bomb and a memory hog to hit them.
func newHostileWorker(t *testing.T) *enginetest.HostileWorker {
	return enginetest.NewHostileWorker(t, enginetest.HostileConfig{Proxied: true,
		Limits: sandbox.Limits{MemoryBytes: 1536 << 20, Procs: 512, CPUSeconds: 300}})
}

// newTenant is tenant name's Claude Code on w; its environment holds
// mark-of-<name>.
func newTenant(t *testing.T, w *enginetest.HostileWorker, name string) enginetest.HostileTenant {
	t.Helper()
	e := claude.New(claude.Config{Process: engine.Process{Bin: enginetest.InstalledBin(t, events.EngineClaudeCode), StateDir: w.StateDir(), KillGrace: time.Second, Sandbox: w.Sandbox},
		Credentials: claude.EnvCredentials{BaseURL: w.BaseURL, Getenv: enginetest.HostileGetenv(name, "ANTHROPIC_API_KEY")}, Env: []string{"ENABLE_TOOL_SEARCH=false", "CLOPEN_MARK=mark-of-" + name}},
		engine.Key{Engine: events.EngineClaudeCode, Tenant: name, Account: "acct"})
	enginetest.DisposeAtCleanup(t, e)
	return enginetest.HostileTenant{Name: name, Workspace: w.Workspace(t, name), Model: claude.DefaultModel, Engine: e}
}

// TestHostileAgent makes tenant B's real Claude Code attack tenant A and
// the worker on one worker through its Bash tool; every attack must fail.
// CLOPEN_HOSTILE_UNCONFINED=1 runs it with no sandbox, where they succeed.
func TestHostileAgent(t *testing.T) {
	w := newHostileWorker(t)
	enginetest.HostileAttacks(t, w, newTenant(t, w, "tenant-a"), newTenant(t, w, "tenant-b"), "mark-of-tenant-a")
}
