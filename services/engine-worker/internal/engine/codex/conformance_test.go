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

// testModel is the model the suite asks for: one of the pinned CLI's
// catalog, so codex has its metadata.
const testModel = "gpt-5.5"

// newEngine is the harness's constructor: the pinned CLI, run inside the
// sandbox against fakellm, with no retries (a forced 500 fails at once).
func newEngine(bin string) func(t *testing.T, env enginetest.Env) engine.Engine {
	return func(t *testing.T, env enginetest.Env) engine.Engine {
		e := codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: env.StateDir, Wrap: env.Wrap, Sandbox: env.Sandbox, KillGrace: time.Second}, Credentials: codex.EnvCredentials{BaseURL: env.BaseURL}},
			engine.Key{Engine: events.EngineCodex, Tenant: "t1", Account: "a1"})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.Dispose(ctx)
		})
		return e
	}
}

// TestConformance runs the suite on the real, pinned Codex, structured
// generation natively (outputSchema) and through the generic fallback
// alike. Cost is off:
// codex reports tokens, never money (the stream manager prices turns).
// OpaqueServerErrors: codex answers an HTTP 500 with its own "We're
// currently experiencing high demand" and drops the provider's body (a
// 502 or 503 keeps it); the kind is still provider.
func TestConformance(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	enginetest.Run(t, enginetest.Harness{Type: events.EngineCodex, New: newEngine(bin), Model: testModel, Confined: true},
		enginetest.Features{Thinking: true, Permissions: true, AskUser: true, Interrupt: true, Resume: true, Fork: true,
			Cost: false, MCP: true, DenyUpFront: true, OpaqueServerErrors: true, Catalog: true, Structured: true})
}
