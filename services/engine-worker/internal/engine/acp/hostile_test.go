package acp_test

import (
	"testing"
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestHostileQwen makes tenant B's real Qwen Code (an ACP agent) attack
// tenant A and the worker on one worker through its shell tool, confined
// as the worker does (each tenant's key in its model proxy); every attack
// must fail. CLOPEN_HOSTILE_UNCONFINED=1 runs it with no sandbox, where
// they succeed.
func TestHostileQwen(t *testing.T) {
	w := enginetest.NewHostileWorker(t, enginetest.HostileConfig{Path: "/v1", Proxied: true})
	bin := enginetest.InstalledBin(t, acp.Qwen.Type)
	tenant := func(name string) enginetest.HostileTenant {
		e := acp.New(acp.Config{Process: engine.Process{Bin: bin, StateDir: w.StateDir(), KillGrace: time.Second, Sandbox: w.Sandbox},
			Profile: &acp.Qwen, DefaultModel: "fake-model",
			Credentials: acp.EnvCredentials{Profile: &acp.Qwen, BaseURL: w.BaseURL, Getenv: enginetest.HostileGetenv(name, "QWEN_API_KEY")},
			Env:         []string{"CLOPEN_MARK=mark-of-" + name}},
			engine.Key{Engine: acp.Qwen.Type, Tenant: name, Account: "acct"})
		enginetest.DisposeAtCleanup(t, e)
		return enginetest.HostileTenant{Name: name, Workspace: w.Workspace(t, name), Model: "fake-model", Engine: e}
	}
	enginetest.HostileAttacks(t, w, tenant("tenant-a"), tenant("tenant-b"), "mark-of-tenant-a")
}
