package codex_test

import (
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestHostileCodex makes tenant B's real Codex attack tenant A on one
// worker through its shell tool; every attack must fail.
// CLOPEN_HOSTILE_UNCONFINED=1 runs it with no sandbox, where they succeed.
func TestHostileCodex(t *testing.T) {
	w := enginetest.NewHostileWorker(t, enginetest.HostileConfig{Path: "/v1"})
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	tenant := func(name string) enginetest.HostileTenant {
		e := codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: w.StateDir(), KillGrace: time.Second, Sandbox: w.Sandbox}, Credentials: codex.EnvCredentials{BaseURL: w.BaseURL, Getenv: enginetest.HostileGetenv(name, "OPENAI_API_KEY")}},
			engine.Key{Engine: events.EngineCodex, Tenant: name, Account: "acct"})
		enginetest.DisposeAtCleanup(t, e)
		return enginetest.HostileTenant{Name: name, Workspace: w.Workspace(t, name), Model: testModel, Engine: e}
	}
	enginetest.HostileAttacks(t, w, tenant("tenant-a"), tenant("tenant-b"), enginetest.HostileKey("tenant-a"))
}
