package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// heartbeat writes a worker's entry in the workers bucket, as engine
// workers do (the gateway only reads it).
func (e *env) heartbeat(t *testing.T, id string, beat time.Time, engines ...events.EngineStatus) {
	t.Helper()
	e.beat(t, events.WorkerInfo{ID: id, Engines: engines, Capacity: 1, StartedAt: beat, BeatAt: beat})
}

// beat writes a worker's whole heartbeat.
func (e *env) beat(t *testing.T, w events.WorkerInfo) {
	t.Helper()
	ctx := context.Background()
	kv, err := e.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: events.BucketWorkers, TTL: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID
	b, _ := json.Marshal(w)
	if _, err := kv.Put(ctx, id, b); err != nil {
		t.Fatal(err)
	}
}

func readiness(t *testing.T, c interface {
	Engines(context.Context) ([]api.EngineReadiness, error)
}) map[events.EngineType]api.EngineReadiness {
	t.Helper()
	list, err := c.Engines(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(events.EngineTypes()) {
		t.Errorf("%d engines listed, want every engine type (%d)", len(list), len(events.EngineTypes()))
	}
	out := map[events.EngineType]api.EngineReadiness{}
	for _, r := range list {
		out[r.Engine] = r
	}
	return out
}

// TestEnginesReadiness: an engine is ready while a worker with a fresh
// heartbeat offers it.
func TestEnginesReadiness(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	if r := readiness(t, a.member.c); r[events.EngineScripted].Ready {
		t.Errorf("scripted ready before any worker: %+v", r[events.EngineScripted])
	}
	now := time.Now().UTC()
	e.heartbeat(t, "w1", now, events.EngineStatus{Engine: events.EngineScripted, Version: "1.0.0"}, events.EngineStatus{Engine: events.EngineClaudeCode, Version: "2.1.332"})
	e.heartbeat(t, "w2", now, events.EngineStatus{Engine: events.EngineScripted, Version: "1.0.1"})
	e.heartbeat(t, "w3", now.Add(-time.Minute), events.EngineStatus{Engine: events.EngineCodex, Version: "0.171.0"}) // stale
	r := readiness(t, a.member.c)
	if s := r[events.EngineScripted]; !s.Ready || s.Workers != 2 || len(s.Versions) != 2 {
		t.Errorf("scripted = %+v, want ready on two workers with two versions", s)
	}
	if c := r[events.EngineClaudeCode]; !c.Ready || c.Workers != 1 || c.Versions[0] != "2.1.332" {
		t.Errorf("claude-code = %+v", c)
	}
	if c := r[events.EngineCodex]; c.Ready || len(c.Versions) != 0 || !strings.Contains(c.Message, "clopen engines doctor") {
		t.Errorf("codex = %+v, want not ready (its only worker's heartbeat is stale), saying where to look", c)
	}
	if s := r[events.EngineScripted]; s.Message != "" {
		t.Errorf("scripted is ready but says %q", s.Message)
	}

	// A worker that checked an engine it does not offer says why.
	e.beat(t, events.WorkerInfo{ID: "w0", Capacity: 1, StartedAt: now, BeatAt: now,
		Engines: []events.EngineStatus{{Engine: events.EngineScripted, Version: "1.0.0"}},
		Unready: []events.EngineProblem{
			{Engine: events.EngineCodex, State: "needs-account", Fix: "no OpenAI key: set OPENAI_API_KEY or add an account"},
			{Engine: events.EngineClaudeCode, State: "not-installed", Fix: "run clopen engines install claude-code"},
		}})
	r = readiness(t, a.member.c)
	if c := r[events.EngineCodex]; c.Ready || c.State != "needs-account" || c.Message != "needs-account: no OpenAI key: set OPENAI_API_KEY or add an account" {
		t.Errorf("codex = %+v, want not ready saying why, as the worker found it", c)
	}
	if c := r[events.EngineClaudeCode]; !c.Ready || c.State != "" || c.Message != "" {
		t.Errorf("claude-code = %+v: another worker offers it, so it is ready whatever one worker lacks", c)
	}
	if c := r[events.EngineGemini]; c.Ready || c.State != "" || !strings.Contains(c.Message, "clopen engines doctor") {
		t.Errorf("gemini = %+v: no worker reports on it, want where to look", c)
	}
}

// TestModelsAndGeneratorsWithoutWorkers: no worker with the engine is an
// empty catalog with a message (200), and a 503 with the same message for
// a generation; bad input is refused before anything is asked.
func TestModelsAndGeneratorsWithoutWorkers(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	rep, err := a.member.c.Models(ctx, events.EngineScripted, "")
	if err != nil || rep.Models == nil || len(rep.Models) != 0 || rep.Message != "no worker has scripted ready" {
		t.Errorf("models without a worker = %+v, %v", rep, err)
	}
	status, _, body := rawDo(t, "GET", e.url+"/v1/models?engine=scripted", a.member.key, nil)
	if status != http.StatusOK {
		t.Errorf("GET /v1/models = %d %+v, want 200", status, body)
	}
	_, err = a.member.c.Models(ctx, "gpt", "")
	wantStatus(t, "unknown engine", err, http.StatusBadRequest)
	_, err = a.member.c.Models(ctx, "", "")
	wantStatus(t, "no engine", err, http.StatusBadRequest)

	_, err = a.member.c.GenerateCommitMessage(ctx, a.project.ID, api.Generate{Engine: events.EngineScripted})
	wantStatus(t, "commit message without a session", err, http.StatusBadRequest)
	b := e.newTenant(t, "bolt")
	_, err = a.member.c.GenerateCommitMessage(ctx, a.project.ID, api.Generate{Engine: events.EngineScripted, SessionID: b.session.ID})
	wantStatus(t, "commit message for another tenant's session", err, http.StatusNotFound)
	elsewhere, err := a.admin.c.CreateProject(ctx, api.CreateProject{Name: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.admin.c.GenerateCommitMessage(ctx, elsewhere.ID, api.Generate{Engine: events.EngineScripted, SessionID: a.session.ID})
	wantStatus(t, "commit message for a session of another project", err, http.StatusNotFound)
	_, err = a.member.c.GenerateCommitMessage(ctx, a.project.ID, api.Generate{Engine: events.EngineScripted, SessionID: a.session.ID})
	var apiErr *events.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable || apiErr.Message != "no worker has scripted ready" {
		t.Errorf("commit message without a worker: err = %v, want 503 naming the engine", err)
	}
	_, err = a.member.c.GenerateBranchName(ctx, a.project.ID, api.Generate{Engine: "gpt", SessionID: a.session.ID})
	wantStatus(t, "branch name on an unknown engine", err, http.StatusBadRequest)
	_, err = a.outsider.c.GenerateBranchName(ctx, a.project.ID, api.Generate{Engine: events.EngineScripted, SessionID: a.session.ID})
	wantStatus(t, "branch name in a project the caller is not in", err, http.StatusNotFound)
	_, err = a.member.c.GenerateDraft(ctx, events.ArtifactSkill, api.GenerateDraft{Engine: events.EngineScripted, Purpose: "review diffs"})
	wantStatus(t, "draft without a worker", err, http.StatusServiceUnavailable)
	_, err = a.member.c.GenerateDraft(ctx, events.ArtifactSkill, api.GenerateDraft{Engine: events.EngineScripted, Purpose: "  "})
	wantStatus(t, "draft without a purpose", err, http.StatusBadRequest)
	_, err = a.member.c.GenerateDraft(ctx, "poem", api.GenerateDraft{Engine: events.EngineScripted, Purpose: "x"})
	wantStatus(t, "draft of an unknown kind", err, http.StatusNotFound)

	// The socket's models.list is the same call.
	cn, err := a.member.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	rep, err = cn.Models(ctx, events.EngineScripted, "")
	if err != nil || len(rep.Models) != 0 || rep.Message != "no worker has scripted ready" {
		t.Errorf("models.list = %+v, %v", rep, err)
	}
	_, err = cn.Models(ctx, "gpt", "")
	wantStatus(t, "models.list of an unknown engine", err, http.StatusBadRequest)
	_, err = cn.Models(ctx, events.EngineScripted, "a.b")
	wantStatus(t, "models.list with a bad account", err, http.StatusBadRequest)
}

// TestOpenAPIDescribesCatalogsAndGenerators: the catalog entry and the
// generator bodies are documented field by field, vocabularies as enums.
func TestOpenAPIDescribesCatalogsAndGenerators(t *testing.T) {
	e := newEnv(t, nil)
	status, raw := getRaw(t, e.url+"/openapi.json")
	if status != http.StatusOK {
		t.Fatalf("GET /openapi.json = %d", status)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
					Ref  string   `json:"$ref"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"EngineModel":       {"id", "name", "provider", "engine", "account", "limit", "modalities", "capabilities", "cost", "unavailable"},
		"ModelCapabilities": {"reasoning", "tools", "structuredOutput", "reasoningControl", "requiresAuthMode"},
		"ReasoningLevel":    {"value", "label"},
		"ModelsReply":       {"models", "message"},
		"EngineReadiness":   {"engine", "ready", "workers", "versions"},
		"Generate":          {"engine", "model", "provider", "accountId", "instructions"},
		"GenerateDraft":     {"engine", "purpose"},
		"CommitMessage":     {"message", "model", "provider", "accountId"},
		"BranchName":        {"name", "model"},
		"Draft":             {"kind", "slug", "name", "description", "body", "content", "model"},
	}
	for name, props := range want {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		for _, p := range props {
			if _, ok := s.Properties[p]; !ok {
				t.Errorf("schema %s lacks %s", name, p)
			}
		}
	}
	if enum := doc.Components.Schemas["ModelCapabilities"].Properties["requiresAuthMode"].Enum; len(enum) != 2 {
		t.Errorf("requiresAuthMode enum = %v", enum)
	}
	if _, ok := doc.Paths["/v1/models"]["get"]; !ok {
		t.Error("GET /v1/models is not documented")
	}
}

func getRaw(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
