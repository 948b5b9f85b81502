package ext_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// TestProbeOverTheBus serves the probe as the bridge binds it (caller
// tokens only) against the real artifacts service: the tenant's admin gets
// the status of the tenant's server, and nobody gets another's.
func TestProbeOverTheBus(t *testing.T) {
	e := startArtifacts(t)
	up := startUpstream(t)
	tenant, other := uuid.NewString(), uuid.NewString()
	e.put(t, tenant, events.MCPServerPut{Server: events.MCPServerDef{Slug: "docs", Transport: events.MCPHTTP, URL: up.URL},
		Headers: map[string]string{"Authorization": "Bearer probe-secret"}})

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ms, err := micro.AddService(e.nc, micro.Config{Name: events.MCPBridgeService, Version: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Stop() })
	srv := svc.NewServer(ctx, e.nc, ms, e.keys.Only(bustoken.Need{CallerPubKey: true}).Verifier())
	t.Cleanup(srv.Stop)
	subject, _ := events.ServiceSubject(events.MCPBridgeService, events.OpMCPServersProbe)
	h := svc.Handler(func(err error) { t.Errorf("probe: %v", err) }, ext.ProbeHandler(ext.Bus{NC: e.nc}, ext.Options{AllowHosts: []string{"127.0.0.1"}}))
	if err := ms.AddEndpoint("probe", srv.Bind(h, bustoken.Caller), micro.WithEndpointSubject(subject)); err != nil {
		t.Fatal(err)
	}

	var st events.MCPServerStatus
	if err := e.call(bustoken.Caller, tenant, events.OpMCPServersProbe, events.MCPServerRef{Slug: "docs"}, &st); err != nil ||
		st.State != string(ext.StateOK) || st.Tools != 3 {
		t.Fatalf("probe = %+v, %v; want ok with 3 tools", st, err)
	}
	if got := up.auth.Load(); got != "Bearer probe-secret" {
		t.Errorf("the server saw Authorization %q, want the sealed header", got)
	}
	refusals := []struct {
		name   string
		kind   bustoken.Kind
		tenant string
		ref    events.MCPServerRef
		want   int
	}{
		{"another tenant's admin", bustoken.Caller, other, events.MCPServerRef{Slug: "docs"}, http.StatusNotFound},
		{"a project with no server of its own", bustoken.Caller, tenant, events.MCPServerRef{ProjectID: "p9", Slug: "docs"}, http.StatusNotFound},
		{"a run's dispatch token", bustoken.Dispatch, tenant, events.MCPServerRef{Slug: "docs"}, http.StatusUnauthorized},
		{"a body naming another tenant", bustoken.Caller, other, events.MCPServerRef{Caller: events.Caller{TenantID: tenant}, Slug: "docs"}, http.StatusUnauthorized},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			var st events.MCPServerStatus
			err := e.call(tt.kind, tt.tenant, events.OpMCPServersProbe, tt.ref, &st)
			var ae *events.APIError
			if !errors.As(err, &ae) || ae.Status != tt.want {
				t.Errorf("probe = %+v, %v; want %d", st, err, tt.want)
			}
		})
	}
}
