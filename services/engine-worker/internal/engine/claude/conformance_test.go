package claude_test

import (
	"context"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// newEngine is the harness's constructor: the pinned CLI, run inside the
// sandbox against fakellm, with no retries (a forced 500 fails at once) and
// MCP tools offered directly: by default 2.1.332 defers them behind its
// ToolSearch tool, which a real model calls and fakellm does not.
func newEngine(bin string) func(t *testing.T, env enginetest.Env) engine.Engine {
	return func(t *testing.T, env enginetest.Env) engine.Engine {
		e := claude.New(claude.Config{Process: engine.Process{Bin: bin, StateDir: env.StateDir, Wrap: env.Wrap, KillGrace: time.Second}, Credentials: claude.EnvCredentials{BaseURL: env.BaseURL}}, engine.Key{Engine: events.EngineClaudeCode, Tenant: "t1", Account: "a1"})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.Dispose(ctx)
		})
		return e
	}
}

// TestConformance runs the suite on the real, pinned Claude Code. Every
// feature is on: the stream-json protocol has them all.
func TestConformance(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineClaudeCode)
	enginetest.Run(t, enginetest.Harness{Type: events.EngineClaudeCode, New: newEngine(bin), Model: claude.DefaultModel},
		enginetest.Features{Thinking: true, Permissions: true, AskUser: true, Interrupt: true, Resume: true, Fork: true, Cost: true, MCP: true, DenyUpFront: true,
			Catalog: true, Structured: true})
}
