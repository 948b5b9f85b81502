package svc_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/svc"
)

type whoReq struct {
	events.Caller
	Note string `json:"note,omitempty"`
}

// demo is a micro service "demo" on a fresh bus, served by a Server
// verifying with v until the test ends.
func demo(t *testing.T, v *bustoken.Verifier) (*nats.Conn, micro.Service, *svc.Server) {
	t.Helper()
	nc, _ := natstest.Connect(t, natstest.Start(t))
	s, err := micro.AddService(nc, micro.Config{Name: "demo", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServer(t.Context(), nc, s, v)
	t.Cleanup(srv.Stop)
	return nc, s, srv
}

// A Server serves a request only with a valid token of a kind its endpoint
// accepts, and the handler sees the token's caller, never the body's.
func TestServerVerifiesTheToken(t *testing.T) {
	nc, s, srv := demo(t, verifier)
	var reached atomic.Int32
	who := func(ctx context.Context, req whoReq) (events.Caller, error) {
		reached.Add(1)
		return req.Caller, nil
	}
	for subject, kinds := range map[string][]bustoken.Kind{"svc.demo.who": nil, "svc.demo.run": {bustoken.Dispatch}} {
		name := strings.TrimPrefix(subject, "svc.demo.")
		if err := s.AddEndpoint(name, srv.Bind(svc.Handler(nil, who), kinds...), micro.WithEndpointSubject(subject)); err != nil {
			t.Fatal(err)
		}
	}
	ds, _ := keys.DispatchSigner()
	dispatch, _ := ds.Sign(bustoken.Claims{TenantID: "t1", RunID: "r1"})
	other, _ := bustoken.Generate().CallerSigner()
	forged, _ := other.Sign(bustoken.Claims{TenantID: "t1"})
	alice := callerToken(t, bustoken.Claims{TenantID: "t1", UserID: "alice", Role: "member"})

	var got events.Caller
	ctx := svc.WithToken(t.Context(), alice)
	// The body's user and role are replaced by the token's.
	if err := svc.Call(ctx, nc, "svc.demo.who", whoReq{Caller: events.Caller{UserID: "root", Role: "admin"}}, &got); err != nil {
		t.Fatal(err)
	}
	if want := (events.Caller{TenantID: "t1", UserID: "alice", Role: "member"}); got != want {
		t.Errorf("handler saw %+v, want the token's %+v", got, want)
	}
	if err := svc.Call(svc.WithToken(t.Context(), dispatch), nc, "svc.demo.run", whoReq{}, &got); err != nil || got.TenantID != "t1" {
		t.Errorf("dispatch endpoint with a dispatch token = %+v, %v", got, err)
	}
	before := reached.Load()
	tests := []struct {
		name    string
		ctx     context.Context
		subject string
		body    whoReq
		want    string
	}{
		{"no token", t.Context(), "svc.demo.who", whoReq{}, "no token"},
		{"other key", svc.WithToken(t.Context(), forged), "svc.demo.who", whoReq{}, "bad signature"},
		{"dispatch on a caller endpoint", svc.WithToken(t.Context(), dispatch), "svc.demo.who", whoReq{}, `"dispatch" token`},
		{"caller on a dispatch endpoint", ctx, "svc.demo.run", whoReq{}, `"caller" token`},
		{"another tenant in the body", ctx, "svc.demo.who", whoReq{Caller: events.Caller{TenantID: "t2"}}, `tenantId "t2" is not the token's`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var apiErr *events.APIError
			err := svc.Call(tt.ctx, nc, tt.subject, tt.body, &got)
			if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized || apiErr.Code != "unauthorized" ||
				!strings.Contains(apiErr.Message, tt.want) {
				t.Errorf("Call = %v, want a 401 saying %q", err, tt.want)
			}
		})
	}
	if n := reached.Load() - before; n != 0 {
		t.Errorf("%d refused requests reached the handler", n)
	}
}

// A handler's own calls carry the token of the request it serves.
func TestHandlersForwardTheToken(t *testing.T) {
	nc, s, srv := demo(t, verifier)
	add := func(name string, f func(context.Context, whoReq) (events.Caller, error)) {
		if err := s.AddEndpoint(name, srv.Bind(svc.Handler(nil, f)), micro.WithEndpointSubject("svc.demo."+name)); err != nil {
			t.Fatal(err)
		}
	}
	add("inner", func(_ context.Context, r whoReq) (events.Caller, error) { return r.Caller, nil })
	add("outer", func(ctx context.Context, r whoReq) (events.Caller, error) {
		var c events.Caller
		err := svc.Call(ctx, nc, "svc.demo.inner", whoReq{}, &c)
		return c, err
	})
	ctx, cancel := context.WithTimeout(svc.WithToken(t.Context(), callerToken(t, bustoken.Claims{TenantID: "t9", UserID: "bob"})), 5*time.Second)
	defer cancel()
	var got events.Caller
	if err := svc.Call(ctx, nc, "svc.demo.outer", whoReq{}, &got); err != nil || got.TenantID != "t9" || got.UserID != "bob" {
		t.Errorf("forwarded call = %+v, %v; want t9/bob", got, err)
	}
}

// A server without keys serves nobody: there is no trusting the body.
func TestServerWithoutKeysRefusesAll(t *testing.T) {
	nc, s, srv := demo(t, nil)
	if err := s.AddEndpoint("who", srv.Bind(svc.Handler(nil, func(_ context.Context, r whoReq) (events.Caller, error) {
		return r.Caller, nil
	})), micro.WithEndpointSubject("svc.demo.who")); err != nil {
		t.Fatal(err)
	}
	var apiErr *events.APIError
	err := svc.Call(signed(t, t.Context()), nc, "svc.demo.who", whoReq{Caller: events.Caller{TenantID: "t1"}}, nil)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized || !strings.Contains(apiErr.Message, "no key") {
		t.Errorf("Call = %v, want a 401 saying the service has no key", err)
	}
}
