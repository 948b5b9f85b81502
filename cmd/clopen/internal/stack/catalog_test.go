package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/gateway/api"
)

// engineAccount creates a provider and an account of engine for a tenant in
// the artifacts service, as an admin would, and returns the account id.
func (h *harness) engineAccount(tenant string, engine events.EngineType) string {
	h.t.Helper()
	admin := events.Caller{TenantID: tenant, UserID: uuid.NewString(), Role: "admin"}
	var p events.Provider
	h.art(events.OpProvidersPut, events.ProviderPut{Caller: admin, Provider: events.Provider{Engine: engine,
		Slug: "p-" + uuid.NewString()[:8], Name: "Provider", Enabled: true}}, &p)
	var a events.Account
	cred := "sk-test"
	h.art(events.OpAccountsPut, events.AccountPut{Caller: admin, Account: events.Account{ProviderID: p.ID, Name: "work"},
		Credential: &cred}, &a)
	return a.ID
}

func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	apiErr, ok := err.(*events.APIError)
	if !ok || apiErr.Status != status {
		t.Errorf("%s: err = %v, want status %d", what, err, status)
	}
}

// TestCatalogsAndGeneratorsEndToEnd: through the gateway, on a real worker,
// artifacts service and streammgr: engine readiness, catalogs over REST and
// the socket (the same payload), accounts of another tenant refused, the
// git generators on a project's workspace, artifact drafts, and a run's
// effort clamped to its model and stamped that way.
func TestCatalogsAndGeneratorsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	h := start(t, Config{Dir: dir})
	ctx := context.Background()
	a, b := h.account("acme"), h.account("bolt")
	meA, err := a.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}

	list, err := a.c.Engines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if r.Engine == events.EngineScripted && (!r.Ready || r.Workers != 1 || len(r.Versions) != 1) {
			t.Errorf("scripted readiness = %+v, want ready on one worker", r)
		}
	}

	// Catalogs: REST and the socket answer alike; an account names itself.
	rest, err := a.c.Models(ctx, events.EngineScripted, "")
	if err != nil || len(rest.Models) == 0 || rest.Models[0].ID != "scripted/hello" || rest.Models[0].Engine != events.EngineScripted {
		t.Fatalf("scripted models = %+v, %v", rest, err)
	}
	cn, err := a.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	ws, err := cn.Models(ctx, events.EngineScripted, "")
	restJSON, _ := json.Marshal(rest)
	wsJSON, _ := json.Marshal(ws)
	if err != nil || string(restJSON) != string(wsJSON) {
		t.Errorf("models.list = %s, %v; want what REST says: %s", wsJSON, err, restJSON)
	}
	acct := h.engineAccount(meA.Tenant.ID, events.EngineScripted)
	mine, err := a.c.Models(ctx, events.EngineScripted, acct)
	if err != nil || len(mine.Models) == 0 || mine.Models[0].Account.ID != acct {
		t.Errorf("models of the tenant's account = %+v, %v", mine, err)
	}
	_, err = b.c.Models(ctx, events.EngineScripted, acct)
	wantStatus(t, "another tenant's account", err, http.StatusNotFound)
	_, err = b.c.GenerateDraft(ctx, events.ArtifactSkill, api.GenerateDraft{Engine: events.EngineScripted, AccountID: acct, Purpose: "x"})
	wantStatus(t, "a draft on another tenant's account", err, http.StatusNotFound)
	_, err = b.c.GenerateCommitMessage(ctx, a.project.ID, api.Generate{Engine: events.EngineScripted})
	wantStatus(t, "a commit message in another tenant's project", err, http.StatusNotFound)

	// The generators of changes describe a session's; a session with no
	// files has none. The catalog resolves a generation's model and account.
	_, err = a.c.GenerateCommitMessage(ctx, a.project.ID, api.Generate{Engine: events.EngineScripted})
	wantStatus(t, "a commit message without a session", err, http.StatusBadRequest)
	empty, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Title: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.c.GenerateBranchName(ctx, a.project.ID, api.Generate{Engine: events.EngineScripted, SessionID: empty.ID})
	wantStatus(t, "a branch name for a session without files", err, http.StatusBadRequest)
	msg, err := a.c.GenerateDraft(ctx, events.ArtifactSkill, api.GenerateDraft{Engine: events.EngineScripted, Model: "scripted/gone", Purpose: "review"})
	if err != nil || msg.Model != "scripted/hello" || msg.Provider != "clopen" {
		t.Errorf("skill draft = %+v, %v; want the scripted document on the default model", msg, err)
	}
	branch, err := a.c.GenerateDraft(ctx, events.ArtifactSkill, api.GenerateDraft{Engine: events.EngineScripted, AccountID: acct, Purpose: "review"})
	if err != nil || branch.AccountID != acct {
		t.Errorf("skill draft on the account = %+v, %v", branch, err)
	}
	draft, err := a.c.GenerateDraft(ctx, events.ArtifactSubagent, api.GenerateDraft{Engine: events.EngineScripted, Purpose: "write tests"})
	if err != nil || draft.Kind != events.ArtifactSubagent || draft.Slug != "scripted-name" || draft.Body != "scripted body" {
		t.Errorf("subagent draft = %+v, %v", draft, err)
	}
	instr, err := a.c.GenerateDraft(ctx, events.ArtifactInstruction, api.GenerateDraft{Engine: events.EngineScripted, Purpose: "be brief"})
	if err != nil || instr.Content != "scripted content" || instr.Slug != "" {
		t.Errorf("instruction draft = %+v, %v", instr, err)
	}
	_, err = a.c.GenerateDraft(ctx, events.ArtifactSkill, api.GenerateDraft{Engine: events.EngineCodex, Purpose: "x"})
	wantStatus(t, "a draft on an engine no worker has", err, http.StatusServiceUnavailable)

	// A run asks for an effort its model has no knob for: it runs, and is
	// recorded and stamped, without one.
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Title: "effort", Model: "scripted/hello", Effort: "high"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "hi", Effort: "high"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitRunState(tenant{Caller: events.Caller{TenantID: meA.Tenant.ID, UserID: meA.User.ID}}, r.RunID, events.RunCompleted)
	run, err := a.c.Run(ctx, r.RunID)
	if err != nil || run.Effort != "" {
		t.Errorf("the run's effort = %q, %v; want none (the model has no knob)", run.Effort, err)
	}
	msgs, err := a.c.Messages(ctx, s.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	assistants := 0
	for _, m := range msgs.Messages {
		var e struct {
			Type   string `json:"type"`
			Engine struct {
				ReasoningEffort *string `json:"reasoningEffort"`
			} `json:"engine"`
		}
		_ = json.Unmarshal(m.Message, &e)
		if e.Type == "assistant" {
			assistants++
			if e.Engine.ReasoningEffort != nil {
				t.Errorf("assistant message stamped with effort %q, want none", *e.Engine.ReasoningEffort)
			}
		}
	}
	if assistants == 0 {
		t.Error("the run saved no assistant message")
	}
}

// TestClaudeCodeCatalogEffortAndGeneration: with the real Claude Code on the
// worker, the catalog is the pinned CLI's; a run asking for an effort its
// model lacks runs with the model's default, and says so on the run and its
// messages; and a commit message comes from the CLI's structured output.
func TestClaudeCodeCatalogEffortAndGeneration(t *testing.T) {
	setup, llm := engineSetup(t, events.EngineClaudeCode)
	dir := t.TempDir()
	h := start(t, Config{Dir: dir, Engines: setup})
	h.waitEngine(events.EngineClaudeCode, engines.ClaudeCodeVersion)
	ctx := context.Background()
	a := h.account("acme")
	me, err := a.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}

	models, err := a.c.Models(ctx, events.EngineClaudeCode, "")
	if err != nil || len(models.Models) != 5 || models.Models[0].ID != "claude-opus-5-5" || models.Models[0].Cost == nil {
		t.Fatalf("claude-code models = %+v, %v", models, err)
	}

	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: events.EngineClaudeCode, Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "hi", Effort: "max"}) // sonnet 4.5 takes no effort
	if err != nil {
		t.Fatal(err)
	}
	h.waitRunState(tenant{Caller: events.Caller{TenantID: me.Tenant.ID, UserID: me.User.ID}}, r.RunID, events.RunCompleted)
	run, err := a.c.Run(ctx, r.RunID)
	if err != nil || run.Effort != "auto" {
		t.Errorf("run effort = %q, %v; want auto, the model's default", run.Effort, err)
	}
	msgs, err := a.c.Messages(ctx, s.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs.Messages {
		o, err := events.DecodeOutput(m.Message)
		if a, ok := o.(events.AssistantMessage); ok && err == nil && a.Engine.ReasoningEffort != "auto" {
			t.Errorf("assistant message stamped %q, want auto", a.Engine.ReasoningEffort)
		}
	}

	// A turn whose agent writes a file: the session's files, diff and the
	// turn's diff show it, and a commit message describes it.
	work := h.writingTurn(a, events.EngineClaudeCode, "claude-sonnet-4-5")
	files, err := a.c.Files(ctx, work.ID, "", "", 0)
	if err != nil || len(files.Files) != 1 || files.Files[0].Path != "notes.txt" || files.Files[0].Size != 5 {
		t.Errorf("files after the turn = %+v, %v", files, err)
	}
	d, err := a.c.SessionDiff(ctx, work.ID)
	if err != nil || len(d.Changes) != 1 || d.Changes[0] != (api.FileChange{Path: "notes.txt", Kind: "added", LinesAdded: 1}) ||
		!strings.Contains(d.Patch, "+++ b/notes.txt\n@@ -0,0 +1 @@\n+PEAR\n") {
		t.Errorf("session diff after the turn = %+v, %v", d, err)
	}
	runs, err := a.c.Runs(ctx, work.ID, 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	if rd, err := a.c.RunDiff(ctx, runs[0].ID); err != nil || len(rd.Changes) != 1 || rd.To != work.HeadSnapshot {
		t.Errorf("run diff = %+v, %v", rd, err)
	}
	before := len(llm.Requests())
	msg, err := a.c.GenerateCommitMessage(ctx, a.project.ID, api.Generate{Engine: events.EngineClaudeCode, Model: "claude-haiku-5-5", SessionID: work.ID})
	if err != nil || msg.Message != "fakellm" || msg.Model != "claude-haiku-5-5" || msg.Provider != "anthropic" {
		t.Fatalf("commit message = %+v, %v", msg, err)
	}
	reqs := llm.Requests()[before:]
	if len(reqs) != 1 || !slices.Contains(reqs[0].Tools, "StructuredOutput") {
		t.Errorf("the generation's model calls = %+v, want one offering StructuredOutput", reqs)
	}
}
