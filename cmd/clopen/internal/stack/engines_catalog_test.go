package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/gateway/api"
)

// effortRun sends "hi" on a new session of engine and model asking for
// effort, waits for the run, and returns the effort the run and its
// assistant messages were stamped with ("" when they disagree).
func (h *harness) effortRun(a account, engine events.EngineType, model, effort string) string {
	h.t.Helper()
	ctx := context.Background()
	s, runID := h.turn(a, engine, model, api.SendMessage{Text: "hi", Effort: effort})
	run, err := a.c.Run(ctx, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	msgs, err := a.c.Messages(ctx, s.ID, "", 0)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, m := range msgs.Messages {
		if o, err := events.DecodeOutput(m.Message); err == nil {
			if am, ok := o.(events.AssistantMessage); ok && am.Engine.ReasoningEffort != run.Effort {
				h.t.Errorf("assistant message stamped %q, the run %q", am.Engine.ReasoningEffort, run.Effort)
				return ""
			}
		}
	}
	return run.Effort
}

// turn runs one turn on a new session of engine and returns the session,
// once the turn completed, as it stands then, and the turn's run.
func (h *harness) turn(a account, engine events.EngineType, model string, msg api.SendMessage) (events.Session, string) {
	h.t.Helper()
	ctx := context.Background()
	me, err := a.c.Me(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: engine, Model: model})
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := a.c.SendMessage(ctx, s.ID, msg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.waitRunState(tenant{Caller: events.Caller{TenantID: me.Tenant.ID, UserID: me.User.ID}}, r.RunID, events.RunCompleted)
	if s, err = a.c.Session(ctx, s.ID); err != nil {
		h.t.Fatal(err)
	}
	return s, r.RunID
}

// writingTurn runs one turn on a new session of engine in which the agent
// writes notes.txt, and returns the session as it stands after it.
func (h *harness) writingTurn(a account, engine events.EngineType, model string) events.Session {
	h.t.Helper()
	s, _ := h.turn(a, engine, model, api.SendMessage{Text: shell("Take notes.", "echo PEAR > notes.txt")})
	if s.HeadSnapshot == "" {
		h.t.Fatalf("session after a writing turn = %+v; want a head snapshot", s)
	}
	return s
}

// TestCodexCatalogEffortAndGeneration: with the real Codex on the worker,
// the catalog is the pinned CLI's; a run asking for an effort its model
// lacks runs at the model's default and says so; a commit message comes
// from codex's native structured output (no tool offered, the schema not in
// the prompt).
func TestCodexCatalogEffortAndGeneration(t *testing.T) {
	setup, llm := engineSetup(t, events.EngineCodex)
	dir := t.TempDir()
	h := start(t, Config{Dir: dir, Engines: setup})
	h.waitEngine(events.EngineCodex, engines.CodexVersion)
	ctx := context.Background()
	a := h.account("acme")

	// The model endpoint is fakellm, not OpenAI's: the models Codex sends
	// code-mode tools are listed as unavailable, and gpt-5.5 is the default.
	models, err := a.c.Models(ctx, events.EngineCodex, "")
	if err != nil || len(models.Models) != 11 || models.Models[0].ID != "gpt-5.5" || models.Models[0].Unavailable != "" ||
		models.Models[0].Capabilities.ReasoningControl == nil {
		t.Fatalf("codex models = %+v, %v", models, err)
	}
	for _, m := range models.Models {
		if m.ID == "gpt-6.2-sol" && !strings.Contains(m.Unavailable, "code mode") {
			t.Errorf("gpt-6.2-sol = %+v, want it listed as unavailable with the reason", m)
		}
	}
	if got := h.effortRun(a, events.EngineCodex, "gpt-5.5", "max"); got != "medium" { // gpt-5.5 stops at xhigh
		t.Errorf("run effort = %q, want medium, the model's default", got)
	}

	s := h.writingTurn(a, events.EngineCodex, "gpt-5.5")
	before := len(llm.Requests())
	msg, err := a.c.GenerateCommitMessage(ctx, a.project.ID, api.Generate{Engine: events.EngineCodex, Model: "gpt-5.5", SessionID: s.ID})
	if err != nil || msg.Message != "fakellm" || msg.Model != "gpt-5.5" || msg.Provider != "openai" {
		t.Fatalf("commit message = %+v, %v", msg, err)
	}
	reqs := llm.Requests()[before:]
	if len(reqs) != 1 || len(reqs[0].Tools) != 0 || strings.Contains(strings.Join(reqs[0].UserTurns, "\n"), "JSON schema") {
		t.Errorf("the generation's model calls = %+v, want one offering no tool, the schema sent natively", reqs)
	}
}

// TestPiCatalogEffortAndGeneration: with the real pi on the worker, the
// catalog is pi's own; a run asking for a level its model lacks runs at
// the model's default; a commit message comes through the generic fallback
// (the schema quoted in a plain turn); and once pi cannot list its models
// (a broken extension in the tenant's config dir) and the tenant's cache is
// dropped, the catalog is empty with the reason, never the stale one.
func TestPiCatalogEffortAndGeneration(t *testing.T) {
	setup, llm := engineSetup(t, events.EnginePi)
	dir := t.TempDir()
	h := start(t, Config{Dir: dir, Engines: setup})
	h.waitEngine(events.EnginePi, engines.PiVersion)
	ctx := context.Background()
	a := h.account("acme")
	me, _ := a.c.Me(ctx)

	models, err := a.c.Models(ctx, events.EnginePi, "")
	if err != nil || len(models.Models) == 0 || models.Models[0].ID != "claude-sonnet-4-6" || models.Models[0].Cost == nil {
		t.Fatalf("pi models = %+v, %v", models, err)
	}
	if got := h.effortRun(a, events.EnginePi, "claude-sonnet-4-5", "xhigh"); got != "medium" { // xhigh is for newer models
		t.Errorf("run effort = %q, want medium, the model's default", got)
	}

	s := h.writingTurn(a, events.EnginePi, "claude-haiku-4-5")
	before := len(llm.Requests())
	msg, err := a.c.GenerateCommitMessage(ctx, a.project.ID, api.Generate{Engine: events.EnginePi, Model: "claude-haiku-4-5", SessionID: s.ID})
	if err != nil || msg.Message != "fakellm" || msg.Model != "claude-haiku-4-5" || msg.Provider != "anthropic" {
		t.Fatalf("commit message = %+v, %v", msg, err)
	}
	if reqs := llm.Requests()[before:]; len(reqs) != 1 || !strings.Contains(strings.Join(reqs[0].UserTurns, "\n"), "JSON schema") {
		t.Errorf("the generation's model calls = %+v, want one plain turn quoting the schema", reqs)
	}

	ext := filepath.Join(dir, "engine-config", me.Tenant.ID, string(events.EnginePi), "default", "extensions")
	if err := os.MkdirAll(ext, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ext, "broken.ts"), []byte(`throw new Error("broken extension")`), 0o600); err != nil {
		t.Fatal(err)
	}
	// An artifact change drops the tenant's cached catalog; the worker may
	// still be starting its watch, so the change is repeated until seen.
	for deadline := time.Now().Add(30 * time.Second); ; {
		h.engineAccount(me.Tenant.ID, events.EnginePi)
		models, err = a.c.Models(ctx, events.EnginePi, "")
		if err != nil || models.Models == nil {
			t.Fatalf("pi models = %+v, %v; want a list", models, err)
		}
		if len(models.Models) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pi still lists %d models with a broken config dir", len(models.Models))
		}
	}
	if !strings.Contains(models.Message, "broken extension") {
		t.Errorf("empty catalog's message = %q, want pi's reason", models.Message)
	}
}
