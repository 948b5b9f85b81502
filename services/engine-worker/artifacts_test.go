package worker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/scripted"
)

func newTestWorker(t *testing.T, created *atomic.Int32) (*Worker, jetstream.JetStream) {
	t.Helper()
	nc, js := natstest.Connect(t, natstest.Start(t))
	lib, err := scripted.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	factory := func(context.Context, engine.Key) (engine.Engine, error) {
		if created != nil {
			created.Add(1)
		}
		return scripted.New(lib), nil
	}
	w, err := New(Config{ID: "w1", Capacity: 1, Workspaces: filepath.Join(t.TempDir(), "ws"), Tokens: testKeys.Only(TokenKeys)},
		Deps{NATS: nc, Logger: logging.Discard(), Health: health.New(), Engines: map[events.EngineType]engine.Factory{events.EngineScripted: factory}})
	if err != nil {
		t.Fatal(err)
	}
	return w, js
}

func TestArtifactChangesRetireOnlyThatTenantsInstances(t *testing.T) {
	var created atomic.Int32
	w, js := newTestWorker(t, &created)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.watchArtifacts(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	use := func(tenant string) {
		_, release, err := w.pool.Acquire(ctx, engine.Key{Engine: events.EngineScripted, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	use("t1")
	use("t2")
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: events.BucketArtifactRev})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rev := 1; created.Load() == 2; rev++ {
		if time.Now().After(deadline) {
			t.Fatal("t1's instance never retired")
		}
		if _, err := kv.Put(ctx, "t1", []byte(strconv.Itoa(rev))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		use("t1")
	}
	before := created.Load()
	use("t2")
	if created.Load() != before {
		t.Error("t2's instance was retired by t1's change")
	}
}

// TestPrepareAppliesThePlan: the run's content, placed through the
// scripted engine's layout (prompt-scoped: skills in the prompt,
// instructions in AGENTS.md), is in its config dir and prompt.
func TestPrepareAppliesThePlan(t *testing.T) {
	w, _ := newTestWorker(t, nil)
	job := events.Job{Tenant: "t1", RunID: "r1", SessionID: "s1", ProjectID: "p1", Engine: events.EngineScripted,
		Prompt: events.Blocks{events.TextBlock{Text: "read " + events.ConfigDirToken + "/.clopen/skills/x/SKILL.md"}}}
	job.DispatchToken = dispatchToken(t, job)
	r := &run{job: job}
	if _, err := w.prepare(context.Background(), r); err == nil || !strings.Contains(err.Error(), "artifacts service unavailable") {
		t.Fatalf("prepare without artifacts = %v, want a clear unavailable error", err)
	}
	s, err := micro.AddService(w.nc, micro.Config{Name: "artifacts", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServer(t.Context(), w.nc, s, testKeys.Verifier())
	defer srv.Stop()
	subject, _ := events.ServiceSubject(events.ArtifactsService, events.OpContent)
	var asked events.ContentRequest
	var claims bustoken.Claims
	err = s.AddEndpoint("content", srv.Bind(svc.Handler(nil, func(ctx context.Context, req events.ContentRequest) (events.Content, error) {
		asked = req
		claims, _ = svc.ClaimsFrom(ctx)
		return events.Content{Revision: 42, Instructions: "Be concise.",
			Skills:      []events.ContentSkill{{Slug: "x", Advertised: true, Files: map[string]string{"SKILL.md": "Do x.\n"}}},
			SkillsIndex: "# Available Skills\n" + events.ConfigDirToken + "/.clopen/skills/x/SKILL.md",
			Permissions: events.PermissionRules{Deny: []string{"Bash"}}}, nil
	}), bustoken.Dispatch), micro.WithEndpointSubject(subject))
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.prepare(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if asked.TenantID != "t1" || asked.ProjectID != "p1" || asked.Engine != events.EngineScripted {
		t.Errorf("content request = %+v", asked)
	}
	if claims.Kind != bustoken.Dispatch || claims.RunID != "r1" {
		t.Errorf("content asked with %+v, want the run's dispatch token", claims)
	}
	if want := filepath.Join(w.cfg.EngineConfig, "t1", "sessions", "s1", "scripted", "default"); p.configDir != want {
		t.Errorf("config dir = %s, want %s", p.configDir, want)
	}
	if b, err := os.ReadFile(filepath.Join(p.configDir, "AGENTS.md")); err != nil || !strings.Contains(string(b), "Be concise.") {
		t.Errorf("AGENTS.md = %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(p.configDir, ".clopen", "skills", "x", "SKILL.md")); err != nil || string(b) != "Do x.\n" {
		t.Errorf("the store's x/SKILL.md = %q, %v", b, err)
	}
	if p.revision != 42 || r.policy.Allows("Bash") || !r.policy.Allows("Read") {
		t.Errorf("revision %d, policy %+v", p.revision, r.policy)
	}
	first, second := p.prompt[0].(events.TextBlock).Text, p.prompt[1].(events.TextBlock).Text
	if !strings.HasPrefix(first, "# Available Skills\n"+p.configDir) || second != "read "+p.configDir+"/.clopen/skills/x/SKILL.md" {
		t.Errorf("prompt = %q, %q", first, second)
	}
}

// TestSessionConfigDirs: each session of a tenant has a config dir of its
// own, which says when it was made anew; a bad name is refused.
func TestSessionConfigDirs(t *testing.T) {
	w, _ := newTestWorker(t, nil)
	job := events.Job{Tenant: "t1", SessionID: "s1", Engine: events.EngineCodex, AccountID: "a1"}
	first, created, err := w.sessionConfigDir(job)
	if err != nil || !created {
		t.Fatalf("first sessionConfigDir = %s, %v, %v; want a new dir", first, created, err)
	}
	if again, created, err := w.sessionConfigDir(job); err != nil || created || again != first {
		t.Errorf("second sessionConfigDir = %s, %v, %v; want %s, not new", again, created, err, first)
	}
	job.SessionID = "s2"
	if other, _, err := w.sessionConfigDir(job); err != nil || other == first {
		t.Errorf("another session's dir = %s, %v; want its own", other, err)
	}
	job.SessionID = ".."
	if dir, _, err := w.sessionConfigDir(job); err == nil {
		t.Errorf("session %q got dir %s", job.SessionID, dir)
	}
}
