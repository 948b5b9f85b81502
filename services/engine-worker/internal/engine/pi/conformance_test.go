package pi_test

import (
	"context"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// testModel is a reasoning model of the pinned pi's Anthropic catalog, so
// pi prices it and takes thinking levels.
const testModel = "claude-sonnet-4-5"

// newEngine is the harness's constructor: the pinned pi, run inside the
// sandbox against fakellm (Anthropic Messages), with pi's automatic
// retries on as the worker runs it.
func newEngine(bin string) func(t *testing.T, env enginetest.Env) engine.Engine {
	return func(t *testing.T, env enginetest.Env) engine.Engine {
		e := pi.New(pi.Config{Process: engine.Process{Bin: bin, StateDir: env.StateDir, Wrap: env.Wrap, Sandbox: env.Sandbox, KillGrace: time.Second},
			Credentials: pi.EnvCredentials{BaseURL: env.BaseURL}, Retry: true},
			engine.Key{Engine: events.EnginePi, Tenant: "t1", Account: "a1"})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.Dispose(ctx)
		})
		return e
	}
}

// TestConformance runs the suite on the real, pinned pi. Permissions,
// AskUser and MCP come from Clopen's extension (pi has none of them); the
// catalog is pi's own (get_available_models); structured generation has
// no native path and goes through the generic fallback (a plain turn).
func TestConformance(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EnginePi)
	enginetest.Run(t, enginetest.Harness{Type: events.EnginePi, New: newEngine(bin), Model: testModel, Confined: true},
		enginetest.Features{Thinking: true, Permissions: true, AskUser: true, Interrupt: true, Resume: true, Fork: true,
			Cost: true, MCP: true, DenyUpFront: true, Catalog: true, Structured: true})
}
