package acp_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// agents are the ACP agents the suite runs on, with the features each one's
// protocol supports. Every false flag is explained in docs/ENGINES.md. The
// model is one the agent's own catalog lists (it is also the adapter's
// DefaultModel): OpenCode names models "<provider>/<model>", and Cline
// runs gpt-4o, the only model it knows for an openai-compatible provider.
var agents = []struct {
	profile  *acp.Profile
	model    string
	timeout  time.Duration // of each turn; 0 means the suite's 60 s
	features enginetest.Features
}{
	{&acp.Gemini, "gemini-3.8-flash", 0, enginetest.Features{Thinking: true, Permissions: true, Interrupt: true, Resume: true, MCP: true,
		Catalog: true, Structured: true}},
	{&acp.Qwen, "fake-model", 150 * time.Second, enginetest.Features{Thinking: true, Permissions: true, Interrupt: true, Resume: true, MCP: true,
		Catalog: true, Structured: true}},
	{&acp.Copilot, "fake-model", 0, enginetest.Features{Thinking: true, Permissions: true, Interrupt: true, Resume: true, MCP: true,
		Catalog: true, Structured: true}},
	{&acp.OpenCode, "clopen/fake-model", 150 * time.Second, enginetest.Features{Thinking: true, Permissions: true, Interrupt: true, Resume: true,
		Fork: true, MCP: true, Catalog: true, Structured: true, RetriesWithoutStatus: true}},
	{&acp.Cline, "gpt-4o", 150 * time.Second, enginetest.Features{Thinking: true, Permissions: true, Interrupt: true, Resume: true, MCP: true,
		Catalog: true, Structured: true, SilentRetries: true}},
}

// newEngine builds an adapter for the installed, pinned agent, run inside
// the sandbox against fakellm. Every scenario gets its own instance and
// state; the cache (Copilot's 235 MB unpack) is shared by the whole run.
func newEngine(p *acp.Profile, model, bin, cache string) func(t *testing.T, env enginetest.Env) engine.Engine {
	return func(t *testing.T, env enginetest.Env) engine.Engine {
		e := acp.New(acp.Config{Process: engine.Process{Bin: bin, StateDir: env.StateDir, Wrap: env.Wrap, KillGrace: time.Second, Logger: testLogger(t)}, Profile: p, DefaultModel: model, CacheDir: cache, Credentials: acp.EnvCredentials{Profile: p, BaseURL: env.BaseURL}}, engine.Key{Engine: p.Type, Tenant: "t1", Account: "a1"})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := e.Dispose(ctx); err != nil {
				t.Errorf("Dispose: %v", err)
			}
		})
		return e
	}
}

// TestConformance runs the suite on each real, pinned ACP agent.
func TestConformance(t *testing.T) {
	cache := filepath.Join(enginetest.EnginesDir(), "..", "engine-cache")
	for _, a := range agents {
		t.Run(string(a.profile.Type), func(t *testing.T) {
			bin := enginetest.InstalledBin(t, a.profile.Type)
			enginetest.Run(t, enginetest.Harness{Type: a.profile.Type, New: newEngine(a.profile, a.model, bin, cache), Model: a.model,
				TurnTimeout: a.timeout}, a.features)
		})
	}
}
