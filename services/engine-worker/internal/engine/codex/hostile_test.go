package codex_test

import (
	"context"
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
	w := enginetest.NewHostileWorker(t, "/v1")
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	tenant := func(name string) enginetest.HostileTenant {
		e := codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: w.Root + "/state", KillGrace: time.Second, Sandbox: w.Sandbox}, Credentials: codex.EnvCredentials{BaseURL: w.BaseURL, Getenv: func(k string) string {
			if k == "OPENAI_API_KEY" {
				return "sk-key-of-" + name
			}
			return ""
		}}},
			engine.Key{Engine: events.EngineCodex, Tenant: name, Account: "acct"})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = e.Dispose(ctx)
		})
		return enginetest.HostileTenant{Name: name, Workspace: w.Workspace(t, name), Model: testModel, Engine: e}
	}
	enginetest.HostileAttacks(t, tenant("tenant-a"), tenant("tenant-b"), "sk-key-of-tenant-a")
}
