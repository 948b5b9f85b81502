package codex_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestGenerateOnTheCLI: a structured generation on the pinned CLI is one
// model call that carries the schema natively (the prompt does not quote
// it, so fakellm's JSON answer comes from text.format) and offers no
// function tool; it keeps no warm app-server and saves no thread. A
// failing provider is a provider error.
func TestGenerateOnTheCLI(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	sb := enginetest.NewSandbox(t, time.Second)
	state := t.TempDir()
	e := codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: state, Wrap: sb.Wrap}, Credentials: codex.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineCodex})
	defer e.Dispose(context.Background())
	schema := json.RawMessage(`{"type":"object","required":["name","kind"],"additionalProperties":false,` +
		`"properties":{"name":{"type":"string"},"kind":{"enum":["fix","feat"]}}}`)
	generate := func(prompt string) (json.RawMessage, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		return e.Generate(ctx, engine.GenerateRequest{Model: "gpt-5.5", Workspace: t.TempDir(), Prompt: prompt, Schema: schema})
	}
	began := time.Now()
	doc, err := generate("@@TOOL@@ Name the branch.")
	if err != nil || string(doc) != `{"kind":"fix","name":"fakellm"}` {
		t.Fatalf("Generate = %s, %v", doc, err)
	}
	t.Logf("generation took %v", time.Since(began).Round(time.Millisecond))
	reqs := sb.Requests(t)
	if len(reqs) != 1 || reqs[0].Model != "gpt-5.5" || len(reqs[0].Tools) != 0 {
		t.Errorf("model calls = %+v, want one to gpt-5.5 offering no function tool", reqs)
	}
	if e.Warm() != 0 {
		t.Errorf("%d warm app-servers after a generation, want none", e.Warm())
	}
	_ = filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "rollout-") {
			t.Errorf("the generation saved a thread: %s", path)
		}
		return nil
	})
	if _, err := generate("@@ERROR@@ Name the branch."); engine.KindOf(err) != events.KindProvider {
		t.Errorf("Generate on a failing provider: err = %v (kind %s), want a provider error", err, engine.KindOf(err))
	}
}
