package ext_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
	artifactsvc "clopen.dev/services/artifacts"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// TestBusResolvesFromArtifacts: ext.Bus against the real artifacts service
// (JetStream, Postgres): a run's token of the project gets the project's
// server, else the tenant's, with its secrets; another project's or
// tenant's run gets none of them.
// artifactsEnv is the real artifacts service on a real bus and database.
type artifactsEnv struct {
	keys bustoken.Keys
	nc   *nats.Conn
}

// startArtifacts starts the artifacts service (http MCP servers may name
// 127.0.0.1) and returns once it serves.
func startArtifacts(t *testing.T) *artifactsEnv {
	t.Helper()
	e := &artifactsEnv{keys: bustoken.Generate()}
	db := pgtest.New(t, artifactsvc.Schema)
	ns := natstest.Start(t)
	artNC, _ := natstest.Connect(t, ns)
	e.nc, _ = natstest.Connect(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := artifactsvc.Config{DataDir: t.TempDir(), Replicas: 1, Tokens: e.keys.Only(artifactsvc.TokenKeys)}
	cfg.Egress.Allow = []string{"127.0.0.1"}
	go func() {
		done <- artifactsvc.Run(ctx, cfg, artifactsvc.Deps{NATS: artNC, DB: db, Logger: logging.Discard(), Health: health.New()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("artifacts.Run: %v", err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := e.call(bustoken.Caller, uuid.NewString(), events.OpRevision, events.ListRequest{}, nil)
		if err == nil {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("artifacts not serving: %v", err)
		}
	}
}

// call sends req to svc.<service>.<op> (artifacts' unless op is the
// bridge's probe) with a token of kind for tenant, as the gateway (a
// caller token) or streammgr (a run's dispatch token, of project p1) signs it.
func (e *artifactsEnv) call(kind bustoken.Kind, tenant, op string, req, resp any) error {
	service := events.ArtifactsService
	if op == events.OpMCPServersProbe {
		service = events.MCPBridgeService
	}
	subject, _ := events.ServiceSubject(service, op)
	claims := bustoken.Claims{TenantID: tenant, UserID: "u1", Role: "admin"}
	if kind == bustoken.Dispatch {
		claims = bustoken.Claims{TenantID: tenant, RunID: "r1", ProjectID: "p1"}
	}
	signer, _ := e.keys.CallerSigner()
	if kind == bustoken.Dispatch {
		signer, _ = e.keys.DispatchSigner()
	}
	tok, err := signer.Sign(claims)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return svc.Call(svc.WithToken(ctx, tok), e.nc, subject, req, resp)
}

// put stores an MCP server of tenant as its admin.
func (e *artifactsEnv) put(t *testing.T, tenant string, req events.MCPServerPut) {
	t.Helper()
	if err := e.call(bustoken.Caller, tenant, events.OpMCPServersPut, req, nil); err != nil {
		t.Fatal(err)
	}
}

func TestBusResolvesFromArtifacts(t *testing.T) {
	e := startArtifacts(t)
	keys, nc := e.keys, e.nc
	tenant, other := uuid.NewString(), uuid.NewString()
	e.put(t, tenant, events.MCPServerPut{Server: events.MCPServerDef{Slug: "docs", Transport: events.MCPHTTP, URL: "https://mcp.example.com/mcp"},
		Headers: map[string]string{"Authorization": "Bearer tenant-wide"}})
	e.put(t, tenant, events.MCPServerPut{Server: events.MCPServerDef{ProjectID: "p1", Slug: "docs", Transport: events.MCPHTTP,
		URL: "https://p1.example.com/mcp"}, Headers: map[string]string{"Authorization": "Bearer p1-only"}})
	bus := ext.Bus{NC: nc}
	asRun := func(tenant, project string) context.Context {
		tok := bustokentest.Sign(t, keys, bustoken.Dispatch, bustoken.Claims{TenantID: tenant, RunID: uuid.NewString(), ProjectID: project})
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		return svc.WithToken(c, tok)
	}
	s, err := bus.Server(asRun(tenant, "p1"), tenant, "p1", "docs")
	if err != nil || s.URL != "https://p1.example.com/mcp" || s.Headers["Authorization"] != "Bearer p1-only" {
		t.Errorf("p1's run = %+v, %v; want p1's server with its header", s, err)
	}
	s, err = bus.Server(asRun(tenant, "p2"), tenant, "p2", "docs")
	if err != nil || s.URL != "https://mcp.example.com/mcp" || s.Headers["Authorization"] != "Bearer tenant-wide" {
		t.Errorf("p2's run = %+v, %v; want the tenant's server", s, err)
	}
	var ae *events.APIError
	if s, err = bus.Server(asRun(tenant, "p2"), tenant, "p1", "docs"); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Errorf("p2's run asking for p1's server = %+v, %v; want 401", s, err)
	}
	if s, err = bus.Server(asRun(other, "p1"), tenant, "p1", "docs"); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Errorf("another tenant's run naming this tenant = %+v, %v; want 401", s, err)
	}
	if s, err = bus.Server(asRun(other, "p1"), other, "p1", "docs"); !errors.Is(err, ext.ErrNotFound) {
		t.Errorf("another tenant's run, its own tenant = %+v, %v; want ErrNotFound", s, err)
	}
}
