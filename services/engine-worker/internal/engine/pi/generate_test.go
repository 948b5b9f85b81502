package pi_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// TestGenerateOnTheCLI: pi has no native structured output, so
// engine.Generate runs one plain turn on the pinned pi that quotes the
// schema and offers no tool but the question tool (which nobody answers);
// the turn is ephemeral: no warm process and no session file stay behind.
func TestGenerateOnTheCLI(t *testing.T) {
	sb := enginetest.NewSandbox(t, time.Second)
	state := t.TempDir()
	e := pi.New(pi.Config{Process: engine.Process{Bin: enginetest.InstalledBin(t, events.EnginePi), StateDir: state, Wrap: sb.Wrap}, Credentials: pi.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EnginePi})
	t.Cleanup(func() { _ = e.Dispose(context.Background()) })
	if _, native := any(e).(engine.StructuredGenerator); native {
		t.Fatal("pi has no native structured output; the adapter must not claim one")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	schema := `{"type":"object","required":["name"],"additionalProperties":false,"properties":{"name":{"type":"string"}}}`
	began := time.Now()
	doc, err := engine.Generate(ctx, e, engine.GenerateRequest{Tenant: "t", Model: testModel, Workspace: t.TempDir(),
		Prompt: "Name the branch.", Schema: json.RawMessage(schema)})
	if err != nil || string(doc) != `{"name":"fakellm"}` {
		t.Fatalf("Generate = %s, %v", doc, err)
	}
	t.Logf("generation took %v", time.Since(began).Round(time.Millisecond))
	reqs := sb.Requests(t)
	if len(reqs) != 1 || !strings.Contains(reqs[0].UserTurns[len(reqs[0].UserTurns)-1], schema) ||
		slices.ContainsFunc(reqs[0].Tools, func(n string) bool { return n != "AskUserQuestion" }) {
		t.Errorf("model calls = %+v, want one quoting the schema, offering no tool but AskUserQuestion", reqs)
	}
	if e.Warm() != 0 {
		t.Errorf("%d warm processes after a generation, want none", e.Warm())
	}
	_ = filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(d.Name(), ".jsonl") {
			t.Errorf("the generation saved a session: %s", path)
		}
		return nil
	})
}
