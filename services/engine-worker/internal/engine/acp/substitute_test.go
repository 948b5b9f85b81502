package acp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestClineSaysWhichModelItRuns: the pinned Cline, asked for a model its
// openai-compatible provider does not list, runs gpt-4o in its place; the
// turn says so in a warning and in system_init, and its messages carry the
// model that answered.
func TestClineSaysWhichModelItRuns(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineCline)
	sb := enginetest.NewSandbox(t, time.Second)
	cache := filepath.Join(enginetest.EnginesDir(), "..", "engine-cache")
	e := newEngine(&acp.Cline, "gpt-4o", bin, cache)(t, enginetest.Env{BaseURL: sb.BaseURL, Wrap: sb.Wrap, StateDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rec := enginetest.NewRecorder()
	err := e.Run(ctx, engine.Request{Tenant: "t1", RunID: "r1", SessionID: "s1", Workspace: t.TempDir(), Model: "gpt-5.5",
		Prompt: []events.Block{events.TextBlock{Text: "hi"}}, Interaction: rec}, rec.Emit)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var warned, inited, stamped bool
	for _, o := range rec.Outputs() {
		switch o := o.(type) {
		case events.Notification:
			warned = warned || (o.Level == events.LevelWarning && strings.Contains(o.Message, "gpt-5.5") && strings.Contains(o.Message, "gpt-4o"))
		case events.SystemInit:
			inited = o.Model == "gpt-4o"
		case events.AssistantMessage:
			stamped = o.Engine.Model.ID == "gpt-4o"
		}
	}
	if !warned || !inited || !stamped {
		t.Errorf("warned %v, system_init names gpt-4o %v, messages stamped gpt-4o %v; outputs %+v", warned, inited, stamped, rec.Outputs())
	}
}
