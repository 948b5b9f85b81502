package pi_test

import (
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// TestHostilePi makes tenant B's real pi attack tenant A and the worker
// on one worker through its bash tool; every attack must fail.
// CLOPEN_HOSTILE_UNCONFINED=1 runs it with no sandbox, where they succeed.
func TestHostilePi(t *testing.T) {
	w := enginetest.NewHostileWorker(t, enginetest.HostileConfig{})
	bin := enginetest.InstalledBin(t, events.EnginePi)
	tenant := func(name string) enginetest.HostileTenant {
		e := pi.New(pi.Config{Process: engine.Process{Bin: bin, StateDir: w.StateDir(), KillGrace: time.Second, Sandbox: w.Sandbox},
			Credentials: pi.EnvCredentials{BaseURL: w.BaseURL, Getenv: enginetest.HostileGetenv(name, "ANTHROPIC_API_KEY")}},
			engine.Key{Engine: events.EnginePi, Tenant: name, Account: "acct"})
		enginetest.DisposeAtCleanup(t, e)
		return enginetest.HostileTenant{Name: name, Workspace: w.Workspace(t, name), Model: testModel, Engine: e}
	}
	// Without a model proxy pi's environment holds its tenant's key.
	enginetest.HostileAttacks(t, w, tenant("tenant-a"), tenant("tenant-b"), enginetest.HostileKey("tenant-a"))
}
