package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestGenerateEphemeral: ACP has no native structured output, so
// engine.Generate runs the fallback turn; the turn is ephemeral, so on the
// pinned Copilot (the quickest to start) no warm process stays behind and
// no scratch home is left in the state dir.
func TestGenerateEphemeral(t *testing.T) {
	sb := enginetest.NewSandbox(t, time.Second)
	state := t.TempDir()
	e := acp.New(acp.Config{Process: engine.Process{Bin: enginetest.InstalledBin(t, events.EngineCopilot), StateDir: state, Wrap: sb.Wrap, KillGrace: time.Second}, Profile: &acp.Copilot, DefaultModel: "fake-model", CacheDir: filepath.Join(enginetest.EnginesDir(), "..", "engine-cache"), Credentials: acp.EnvCredentials{Profile: &acp.Copilot, BaseURL: sb.BaseURL}},
		engine.Key{Engine: events.EngineCopilot, Tenant: "t", Account: "a"})
	t.Cleanup(func() { _ = e.Dispose(context.Background()) })
	if _, native := any(e).(engine.StructuredGenerator); native {
		t.Fatal("ACP has no native structured output; the adapter must not claim one")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	schema := `{"type":"object","required":["name"],"additionalProperties":false,"properties":{"name":{"type":"string"}}}`
	doc, err := engine.Generate(ctx, e, engine.GenerateRequest{Tenant: "t", Model: "fake-model", Workspace: t.TempDir(),
		Prompt: "Name the branch.", Schema: json.RawMessage(schema)})
	if err != nil || string(doc) != `{"name":"fakellm"}` {
		t.Fatalf("Generate = %s, %v", doc, err)
	}
	if e.Warm() != 0 {
		t.Errorf("%d warm processes after a generation, want none", e.Warm())
	}
	entries, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range entries {
		if strings.HasPrefix(d.Name(), ".scratch-") {
			t.Errorf("the generation left its scratch home %s", d.Name())
		}
	}
}
