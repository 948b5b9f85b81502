package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
	artifactsvc "clopen.dev/services/artifacts"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// env is a running gateway on real JetStream and Postgres, with the stub
// streammgr and the real artifacts service behind it.
type env struct {
	url  string
	db   *pgxpool.Pool
	js   jetstream.JetStream
	stub *stubStreammgr
}

func newEnv(t *testing.T, tune func(*gateway.Config)) *env {
	t.Helper()
	db := pgtest.New(t, gateway.Schema, artifactsvc.Schema)
	ns := natstest.Start(t)
	gwNC, _ := natstest.Connect(t, ns)
	stubNC, js := natstest.Connect(t, ns)
	artNC, _ := natstest.Connect(t, ns)
	declareChat(t, js)
	startArtifacts(t, artNC, db)
	e := &env{db: db, js: js, stub: startStub(t, stubNC, js)}

	cfg := gateway.DefaultConfig()
	cfg.Tokens = testKeys.Only(gateway.TokenKeys)
	if tune != nil {
		tune(&cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(ctx, cfg, gateway.Deps{NATS: gwNC, DB: db, Logger: logging.New(testLog{t}, "warn"), Health: health.New(),
			Listener: ln, Ready: func(url string) { ready <- url }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway.Run: %v", err)
		}
	})
	select {
	case e.url = <-ready:
	case err := <-done:
		t.Fatalf("gateway.Run: %v", err)
	}
	return e
}

// testKeys are the bus token keys of the tests' services.
var testKeys = bustoken.Generate()

// startArtifacts runs the real artifacts service on its own connection
// with a fresh data dir, until the test ends, and waits for it to answer.
func startArtifacts(t *testing.T, nc *nats.Conn, db *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- artifactsvc.Run(ctx, artifactsvc.Config{DataDir: t.TempDir(), Replicas: 1, Tokens: testKeys.Only(artifactsvc.TokenKeys)},
			artifactsvc.Deps{NATS: nc, DB: db, Logger: logging.New(testLog{t}, "warn"), Health: health.New()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("artifacts.Run: %v", err)
		}
	})
	subject, _ := events.ServiceSubject(events.ArtifactsService, events.OpRevision)
	probe := events.ListRequest{Caller: events.Caller{TenantID: uuid.NewString(), UserID: uuid.NewString()}}
	signer, _ := testKeys.CallerSigner()
	probeToken, err := signer.Sign(bustoken.Claims{TenantID: probe.TenantID, UserID: probe.UserID})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := svc.Call(svc.WithToken(ctx, probeToken), nc, subject, probe, nil)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("artifacts not serving: %v", err)
		}
	}
}

// declareChat declares CHAT as streammgr does (streams.go): the gateway only
// reads it, and importing streammgr would couple the two services' modules.
func declareChat(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	_, err := js.CreateOrUpdateStream(context.Background(), jetstream.StreamConfig{
		Name: events.StreamChat, Subjects: []string{events.SubjectChatAll}, Retention: jetstream.LimitsPolicy,
		Storage: jetstream.FileStorage, MaxAge: 24 * time.Hour, Discard: jetstream.DiscardOld,
		Duplicates: 2 * time.Minute, AllowDirect: true,
	})
	if err != nil {
		t.Fatalf("declare CHAT: %v", err)
	}
}

// actor is a user of a tenant with a client on its key.
type actor struct {
	user  api.User
	key   string
	keyID string
	c     *client.Client
}

// tenantFix is one tenant's world: an admin, a member of the project, a
// member outside it, a project with a session and a run.
type tenantFix struct {
	tenant        api.Tenant
	admin, member actor
	outsider      actor
	project       api.Project
	session       events.Session
	runID         string
}

func (e *env) newActor(t *testing.T, slug, email, role string) actor {
	t.Helper()
	ctx := context.Background()
	u, err := gateway.CreateUser(ctx, e.db, slug, api.CreateUser{Email: email, Name: strings.Split(email, "@")[0], Role: role})
	if err != nil {
		t.Fatalf("create user %s: %v", email, err)
	}
	k, err := gateway.CreateKey(ctx, e.db, slug, email, "test")
	if err != nil {
		t.Fatalf("create key %s: %v", email, err)
	}
	return actor{user: u, key: k.Key, keyID: k.ID, c: client.New(e.url, k.Key)}
}

func (e *env) newTenant(t *testing.T, slug string) tenantFix {
	t.Helper()
	ctx := context.Background()
	tn, err := gateway.CreateTenant(ctx, e.db, slug, strings.ToUpper(slug))
	if err != nil {
		t.Fatal(err)
	}
	f := tenantFix{tenant: tn,
		admin:    e.newActor(t, slug, "admin@"+slug+".test", api.RoleAdmin),
		member:   e.newActor(t, slug, "member@"+slug+".test", api.RoleMember),
		outsider: e.newActor(t, slug, "outsider@"+slug+".test", api.RoleMember),
	}
	if f.project, err = f.admin.c.CreateProject(ctx, api.CreateProject{Name: slug + "-project"}); err != nil {
		t.Fatal(err)
	}
	if _, err = f.admin.c.AddMember(ctx, f.project.ID, api.AddMember{UserID: f.member.user.ID}); err != nil {
		t.Fatal(err)
	}
	if f.session, err = f.member.c.CreateSession(ctx, f.project.ID, api.CreateSession{Title: "first"}); err != nil {
		t.Fatal(err)
	}
	r, err := f.member.c.SendMessage(ctx, f.session.ID, api.SendMessage{Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	f.runID = r.RunID
	return f
}

// wantStatus fails unless err is an APIError with status.
func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	var e *events.APIError
	if !errors.As(err, &e) || e.Status != status {
		t.Errorf("%s: err = %v, want status %d (%s)", what, err, status, http.StatusText(status))
	}
}

// testLog sends the gateway's log lines to the test's log.
type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
