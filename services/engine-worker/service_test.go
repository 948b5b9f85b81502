package worker

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/pkg/platform/snapshot/snapshottest"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// codexLike is a catalog with an effort knob, served by two providers.
var codexLike = []events.EngineModel{
	{ID: "big", Name: "Big", Provider: "openai", Capabilities: events.ModelCapabilities{
		ReasoningControl: &events.ReasoningControl{Levels: events.ReasoningLevels("low", "medium", "high"), Default: "medium"}}},
	{ID: "small", Name: "Small", Provider: "openrouter"},
}

// engineEnv is a worker serving the engine endpoints on real JetStream,
// next to a stand-in for the artifacts service's accounts (fakeAccounts).
type engineEnv struct {
	w      *Worker
	nc     *nats.Conn
	accts  *fakeAccounts
	codex  *enginetest.Answers // catalog with levels; answers Text
	broken *enginetest.Answers // its catalog fails
}

func newEngineEnv(t *testing.T) *engineEnv {
	t.Helper()
	ns := natstest.Start(t)
	nc, _ := natstest.Connect(t, ns)
	artNC, artJS := natstest.Connect(t, ns)
	e := &engineEnv{nc: nc, accts: serveFakeAccounts(t, artNC, artJS), codex: &enginetest.Answers{EngineType: events.EngineCodex, Catalog: codexLike},
		broken: &enginetest.Answers{EngineType: events.EnginePi, CatalogErr: errors.New("pi: provider list: connection refused")}}
	w, err := New(Config{ID: "w1", Capacity: 1, Workspaces: filepath.Join(t.TempDir(), "ws"), Tokens: testKeys.Only(TokenKeys)}, Deps{NATS: nc, Logger: logging.Discard(),
		Health: health.New(), Engines: map[events.EngineType]engine.Factory{
			events.EngineCodex: enginetest.Factory(e.codex), events.EnginePi: enginetest.Factory(e.broken)}})
	if err != nil {
		t.Fatal(err)
	}
	e.w = w
	if w.snapStore, err = snapshot.ObjectStore(context.Background(), artJS, events.BucketSnapshots, 1); err != nil {
		t.Fatal(err)
	}
	for _, typ := range w.pool.Types() {
		w.versions[typ] = "test"
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = w.serveEngines(ctx); done <- struct{}{} }()
	go func() { _ = w.watchArtifacts(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			<-done
		}
		w.pool.Dispose(context.Background())
	})
	for _, typ := range w.pool.Types() {
		subject, _ := events.EngineSubject(typ, events.OpModels)
		e.waitSubject(t, subject, events.ModelsRequest{}) // refused before any catalog read
	}
	return e
}

func caller(tenant string) events.Caller {
	return events.Caller{TenantID: tenant, UserID: "u-" + tenant}
}

func (e *engineEnv) waitSubject(t *testing.T, subject string, req any) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := svc.Call(asCaller(t, context.Background(), req), e.nc, subject, req, nil)
		var apiErr *events.APIError
		if err == nil || (errors.As(err, &apiErr) && apiErr.Status != http.StatusServiceUnavailable) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer: %v", subject, err)
		}
	}
}

// account creates an account of typ for tenant and returns its id.
func (e *engineEnv) account(t *testing.T, tenant string, typ events.EngineType) string {
	t.Helper()
	waitUntil(t, "the worker watches artifact revisions", func() bool {
		_, ok := e.w.artifactRevs.Load(watchingArtifacts)
		return ok
	})
	id := e.accts.add(t, tenant, typ)
	// The worker drops the tenant's cached catalogs when it sees the new
	// revision: wait until it has, so that what a test caches next stays.
	entry, err := e.accts.kv.Get(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the worker applies the tenant's artifact revision", func() bool {
		v, ok := e.w.artifactRevs.Load(tenant)
		return ok && v == string(entry.Value())
	})
	return id
}

func (e *engineEnv) models(t *testing.T, req events.ModelsRequest) (events.ModelsReply, error) {
	return call[events.ModelsReply](t, e, req.Engine, events.OpModels, req)
}

func (e *engineEnv) generate(t *testing.T, req events.GenerateRequest) (events.GenerateReply, error) {
	return call[events.GenerateReply](t, e, req.Engine, events.OpGenerate, req)
}

// call asks svc.engine.<engine>.<op>.
func call[Resp any](t *testing.T, e *engineEnv, engine events.EngineType, op string, req any) (Resp, error) {
	t.Helper()
	subject, _ := events.EngineSubject(engine, op)
	var out Resp
	err := svc.Call(asCaller(t, context.Background(), req), e.nc, subject, req, &out)
	return out, err
}

func wantAPIError(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var apiErr *events.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != status || (code != "" && apiErr.Code != code) {
		t.Errorf("%s: err = %v, want %d %s", what, err, status, code)
	}
}

func TestModelsEndpoint(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	t.Cleanup(func() { otel.SetMeterProvider(nil) })
	e := newEngineEnv(t)
	tA, tB := uuid.NewString(), uuid.NewString()
	acct := e.account(t, tA, events.EngineCodex)

	// The tenant's account: every entry names it; the engine read it once.
	rep, err := e.models(t, events.ModelsRequest{Caller: caller(tA), Engine: events.EngineCodex, AccountID: acct})
	if err != nil || len(rep.Models) != 2 || rep.Models[0].Account.ID != acct || rep.Models[0].Engine != events.EngineCodex || rep.Message != "" {
		t.Fatalf("models = %+v, %v; want the catalog read with the account", rep, err)
	}
	reads := e.codex.CatalogRequests()
	if len(reads) != 1 || reads[0].Tenant != tA || reads[0].AccountID != acct ||
		reads[0].ConfigDir != filepath.Join(e.w.cfg.EngineConfig, tA, "codex", acct) {
		t.Errorf("catalog reads = %+v, want one for the tenant, account and its config dir", reads)
	}
	// Cached, and filtered by provider.
	rep, _ = e.models(t, events.ModelsRequest{Caller: caller(tA), Engine: events.EngineCodex, AccountID: acct, Provider: "openrouter"})
	if len(rep.Models) != 1 || rep.Models[0].ID != "small" || len(e.codex.CatalogRequests()) != 1 {
		t.Errorf("second read = %+v after %d engine reads; want small only, from the cache", rep.Models, len(e.codex.CatalogRequests()))
	}

	// Another tenant's account, an unknown one, a bad token: not found.
	_, err = e.models(t, events.ModelsRequest{Caller: caller(tB), Engine: events.EngineCodex, AccountID: acct})
	wantAPIError(t, "another tenant's account", err, http.StatusNotFound, "not_found")
	_, err = e.models(t, events.ModelsRequest{Caller: caller(tA), Engine: events.EngineCodex, AccountID: uuid.NewString()})
	wantAPIError(t, "unknown account", err, http.StatusNotFound, "not_found")
	_, err = e.models(t, events.ModelsRequest{Caller: caller(tA), Engine: events.EngineCodex, AccountID: "../x"})
	wantAPIError(t, "account with a path", err, http.StatusNotFound, "not_found")
	// The account of another engine is not this engine's.
	piAcct := e.account(t, tA, events.EnginePi)
	_, err = e.models(t, events.ModelsRequest{Caller: caller(tA), Engine: events.EngineCodex, AccountID: piAcct})
	wantAPIError(t, "an account of another engine", err, http.StatusNotFound, "not_found")
	// No tenant means no caller token: refused before the endpoint runs.
	_, err = e.models(t, events.ModelsRequest{Caller: events.Caller{UserID: "u"}, Engine: events.EngineCodex})
	wantAPIError(t, "no tenant", err, http.StatusUnauthorized, "unauthorized")
	_, err = e.models(t, events.ModelsRequest{Caller: caller(tA), Engine: events.EngineCodex, AccountID: "a.b"})
	wantAPIError(t, "account that is no token", err, http.StatusNotFound, "not_found")

	// A catalog that fails is an empty list with the reason, counted, never cached.
	for i := range 2 {
		rep, err := e.models(t, events.ModelsRequest{Caller: caller(tA), Engine: events.EnginePi})
		if err != nil || rep.Models == nil || len(rep.Models) != 0 || !strings.Contains(rep.Message, "connection refused") {
			t.Errorf("failing catalog, read %d = %+v, %v; want [] and the reason", i, rep, err)
		}
	}
	if n := len(e.broken.CatalogRequests()); n != 2 {
		t.Errorf("the failing catalog was read %d times, want 2 (failures are not cached)", n)
	}
	if got := counter(t, reader, "clopen.worker.catalog.failures"); got != 2 {
		t.Errorf("catalog failures counted = %d, want 2", got)
	}

	// An artifact change of the tenant (its accounts are artifacts) drops its
	// cache. The worker may still be waiting for the bucket to watch, so the
	// change is repeated until it is seen.
	before := len(e.codex.CatalogRequests())
	for deadline := time.Now().Add(10 * time.Second); len(e.codex.CatalogRequests()) == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the tenant's catalog stayed cached after its artifacts changed")
		}
		e.account(t, tA, events.EngineCodex)
		_, _ = e.models(t, events.ModelsRequest{Caller: caller(tA), Engine: events.EngineCodex, AccountID: acct})
	}
}

// counter sums a counter's data points.
func counter(t *testing.T, r sdkmetric.Reader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range s.DataPoints {
					n += dp.Value
				}
			}
		}
	}
	return n
}

const commitSchema = `{"type":"object","required":["message"],"properties":{"message":{"type":"string"}}}`

func TestGenerateEndpoint(t *testing.T) {
	e := newEngineEnv(t)
	tA := uuid.NewString()
	ctx := caller(tA)

	// The catalog is the truth: an unknown model falls back to the default,
	// a stale provider hint gives way to the catalog's.
	e.codex.Text = "Here:\n```json\n{\"message\": \"fix: the bug\"}\n```"
	rep, err := e.generate(t, events.GenerateRequest{Caller: ctx, Engine: events.EngineCodex, Model: "gone", Provider: "anthropic",
		Schema: json.RawMessage(commitSchema), Prompt: "Describe the change."})
	if err != nil || string(rep.Output) != `{"message":"fix: the bug"}` || rep.Model != "big" || rep.Provider != "openai" {
		t.Fatalf("generate = %+v, %v", rep, err)
	}
	rep, _ = e.generate(t, events.GenerateRequest{Caller: ctx, Engine: events.EngineCodex, Model: "small", Provider: "openai",
		Schema: json.RawMessage(commitSchema), Prompt: "Describe the change."})
	reqs := e.codex.Requests()
	if rep.Model != "small" || rep.Provider != "openrouter" || reqs[len(reqs)-1].Model != "small" || reqs[len(reqs)-1].Provider != "openrouter" {
		t.Errorf("generate with a stale provider = %+v, engine asked %+v", rep, reqs[len(reqs)-1])
	}

	// Bad input is a clear 400.
	for name, req := range map[string]events.GenerateRequest{
		"schema not an object":      {Schema: json.RawMessage(`[]`), Prompt: "x"},
		"schema of a string":        {Schema: json.RawMessage(`{"type":"string"}`), Prompt: "x"},
		"no prompt":                 {Schema: json.RawMessage(commitSchema)},
		"unknown generator":         {Generator: "poem"},
		"generator and own schema":  {Generator: events.ArtifactSkill, Input: "x", Schema: json.RawMessage(commitSchema)},
		"draft without a purpose":   {Generator: events.ArtifactSkill},
		"changes without a session": {Generator: events.GenerateCommitMessage},
	} {
		req.Caller, req.Engine = ctx, events.EngineCodex
		_, err := e.generate(t, req)
		wantAPIError(t, name, err, http.StatusBadRequest, "invalid_request")
	}
	// An answer that is not a document is the engine's failure.
	e.codex.Text = `{"message": "cut`
	_, err = e.generate(t, events.GenerateRequest{Caller: ctx, Engine: events.EngineCodex, Schema: json.RawMessage(commitSchema), Prompt: "x"})
	wantAPIError(t, "truncated answer", err, http.StatusBadGateway, "provider")
	// The failing catalog leaves nothing to resolve against.
	_, err = e.generate(t, events.GenerateRequest{Caller: ctx, Engine: events.EnginePi, Schema: json.RawMessage(commitSchema), Prompt: "x"})
	wantAPIError(t, "no catalog", err, http.StatusServiceUnavailable, "unavailable")
}

// captureWorkspace writes files (path: content) into dir and captures it
// as the tenant's workspace tree, from prev.
func (e *engineEnv) captureWorkspace(t *testing.T, tenant, dir string, prev *snapshot.Manifest, files map[string]string) *snapshot.Manifest {
	t.Helper()
	return snapshottest.Workspace(t, e.w.snapshots(tenant), dir, prev, files)
}

func TestChangeGenerators(t *testing.T) {
	e := newEngineEnv(t)
	tA, tB, session := uuid.NewString(), uuid.NewString(), uuid.NewString()
	dir := t.TempDir()
	base := e.captureWorkspace(t, tA, dir, nil, map[string]string{"README.md": "# Demo\n"})
	head := e.captureWorkspace(t, tA, dir, base, map[string]string{"login.go": "package login\n\nfunc Login() {}\n"})
	req := events.GenerateRequest{Caller: caller(tA), Engine: events.EngineCodex, Generator: events.GenerateCommitMessage, SessionID: session, From: base.ID}
	_, err := e.generate(t, req)
	wantAPIError(t, "no head", err, http.StatusBadRequest, "invalid_request")
	req.To = base.ID
	_, err = e.generate(t, req)
	wantAPIError(t, "no changes", err, http.StatusBadRequest, "invalid_request")
	req.To = strings.Repeat("0", 64)
	_, err = e.generate(t, req)
	wantAPIError(t, "unknown snapshot", err, http.StatusNotFound, "not_found")
	other := req
	other.Caller, other.To = caller(tB), head.ID
	_, err = e.generate(t, other)
	wantAPIError(t, "another tenant's snapshot", err, http.StatusNotFound, "not_found")

	req.To = head.ID
	e.codex.Text = `{"message":"Add the login package"}`
	rep, err := e.generate(t, req)
	if err != nil || string(rep.Output) != `{"message":"Add the login package"}` {
		t.Fatalf("commit message = %+v, %v", rep, err)
	}
	turn := e.codex.Requests()[len(e.codex.Requests())-1]
	prompt := turn.PromptText()
	if !strings.Contains(prompt, "added login.go (+3 -0)") || !strings.Contains(prompt, "+func Login() {}") || strings.Contains(prompt, "README") ||
		!strings.HasPrefix(turn.Workspace, filepath.Join(e.w.cfg.Workspaces, tA, ".generate-")) {
		t.Errorf("the engine ran in %s with prompt %q; want a scratch dir and the session's changed files and diff", turn.Workspace, prompt)
	}

	e.codex.Text = `{"name":"Feat: Add the LOGIN page!!"}`
	req.Generator = events.GenerateBranchName
	req.From = "" // from an empty workspace: everything is added
	rep, err = e.generate(t, req)
	if err != nil || string(rep.Output) != `{"name":"feat-add-the-login-page"}` {
		t.Errorf("branch name = %s, %v", rep.Output, err)
	}
	if prompt := e.codex.Requests()[len(e.codex.Requests())-1].PromptText(); !strings.Contains(prompt, "added README.md (+1 -0)") {
		t.Errorf("branch name prompt from nothing = %q", prompt)
	}
}

func TestDraftsRunInAScratchDir(t *testing.T) {
	e := newEngineEnv(t)
	tA := uuid.NewString()
	e.codex.Text = `{"name":"review","description":"Reviews diffs.","body":"# Review\nRead the diff."}`
	rep, err := e.generate(t, events.GenerateRequest{Caller: caller(tA), Engine: events.EngineCodex, Generator: events.ArtifactSkill,
		Input: "review pull requests for security problems"})
	if err != nil || !strings.Contains(string(rep.Output), `"name":"review"`) {
		t.Fatalf("skill draft = %s, %v", rep.Output, err)
	}
	turn := e.codex.Requests()[0]
	if !strings.Contains(turn.PromptText(), "review pull requests for security problems") ||
		!strings.HasPrefix(turn.Workspace, filepath.Join(e.w.cfg.Workspaces, tA, ".generate-")) {
		t.Errorf("draft turn ran in %s with %q", turn.Workspace, turn.PromptText())
	}
	if _, err := os.Stat(turn.Workspace); !os.IsNotExist(err) {
		t.Errorf("the scratch dir %s is left behind: %v", turn.Workspace, err)
	}
}

func TestClampEffortOfARun(t *testing.T) {
	codex := &enginetest.Answers{EngineType: events.EngineCodex, Catalog: codexLike}
	failing := &enginetest.Answers{EngineType: events.EnginePi, CatalogErr: errors.New("down")}
	nc, _ := natstest.Connect(t, natstest.Start(t))
	w, err := New(Config{ID: "w1", Capacity: 1, Workspaces: t.TempDir(), Tokens: testKeys.Only(TokenKeys)}, Deps{NATS: nc, Logger: logging.Discard(), Health: health.New(),
		Engines: map[events.EngineType]engine.Factory{events.EngineCodex: enginetest.Factory(codex), events.EnginePi: enginetest.Factory(failing)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		engine      events.EngineType
		model, give string
		want        string
		wantNil     bool
	}{
		{"a level of the model", events.EngineCodex, "big", "high", "high", false},
		{"stale level: the default", events.EngineCodex, "big", "max", "medium", false},
		{"unset: the default", events.EngineCodex, "big", "", "medium", false},
		{"no model: the default model's", events.EngineCodex, "", "low", "low", false},
		{"a model without a knob", events.EngineCodex, "small", "high", "", false},
		{"a model the catalog lacks: unchanged", events.EngineCodex, "future", "ultra", "ultra", false},
		{"no catalog: not reported", events.EnginePi, "m", "high", "", true},
		{"the scripted engine has no knob", events.EngineScripted, "scripted/hello", "high", "", false},
	}
	for _, tt := range tests {
		got, _ := w.clampEffort(context.Background(), events.Job{Tenant: "t1", Engine: tt.engine, Model: tt.model, Effort: tt.give})
		if (got == nil) != tt.wantNil || (got != nil && *got != tt.want) {
			t.Errorf("%s: clampEffort = %v, want %q (nil: %v)", tt.name, deref(got, "<nil>"), tt.want, tt.wantNil)
		}
	}
}

func TestBranchName(t *testing.T) {
	tests := []struct{ give, want string }{
		{"feat/add-login", "feat/add-login"},
		{"Feat: Add the LOGIN page!!", "feat-add-the-login-page"},
		{"  fix/..weird..//name.lock  ", "fix/weird/name"},
		{".hidden/-dash-/x.lock.lock", "hidden/dash/x"},
		{"@", "changes"},
		{"", "changes"},
		{"naïve café", "na-ve-caf"},
		{"a~b^c:d?e*f[g\\h@{i} j", "a-b-c-d-e-f-g-h-i-j"},
		{strings.Repeat("word-", 30), strings.TrimSuffix(strings.Repeat("word-", 12), "-")},
		{"feat/" + strings.Repeat("x", 80), "feat/" + strings.Repeat("x", 55)},
	}
	for _, tt := range tests {
		got := BranchName(tt.give)
		if got != tt.want {
			t.Errorf("BranchName(%q) = %q, want %q", tt.give, got, tt.want)
		}
		if out, err := exec.Command("git", "check-ref-format", "--branch", got).CombinedOutput(); err != nil {
			t.Errorf("git check-ref-format --branch %q: %v: %s", got, err, out)
		}
	}
}

// TestKnownVersionsAreNotAskedAgain: a version the start-up check already
// found (Deps.Versions) is advertised as is; an engine without one reports
// its own (the scripted engine its library's).
func TestKnownVersionsAreNotAskedAgain(t *testing.T) {
	ns := natstest.Start(t)
	nc, _ := natstest.Connect(t, ns)
	w, err := New(Config{ID: "w1", Capacity: 1, Workspaces: t.TempDir(), Tokens: testKeys.Only(TokenKeys)}, Deps{NATS: nc, Logger: logging.Discard(), Health: health.New(),
		Engines: map[events.EngineType]engine.Factory{
			events.EngineCodex: enginetest.Factory(&enginetest.Answers{EngineType: events.EngineCodex}),
			events.EnginePi: func(context.Context, engine.Key) (engine.Engine, error) {
				return nil, errors.New("pi: not startable")
			}},
		Versions: map[events.EngineType]string{events.EngineCodex: "0.171.0", events.EnginePi: "0.73.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.pool.Dispose(context.Background()) })
	ctx := context.Background()
	if v, err := w.version(ctx, events.EngineCodex); v != "0.171.0" || err != nil {
		t.Errorf("codex version = %q, %v; want the known 0.171.0", v, err)
	}
	if v, err := w.version(ctx, events.EngineScripted); v != "1.0.0" || err != nil {
		t.Errorf("scripted version = %q, %v; want its own 1.0.0", v, err)
	}
	// A known version does not offer an engine whose adapter cannot start.
	if v, err := w.version(ctx, events.EnginePi); err == nil {
		t.Errorf("pi version = %q, want the factory's error", v)
	}
}
