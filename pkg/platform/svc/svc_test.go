package svc_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/svc"
)

type echoReq struct {
	Name string            `json:"name"`
	Tags map[string]string `json:"tags,omitempty"`
}
type echoResp struct {
	Greeting string `json:"greeting"`
}

func TestCallMapsRepliesAndErrorsOnce(t *testing.T) {
	nc, _ := natstest.Connect(t, natstest.Start(t))
	var internal []error
	s, err := micro.AddService(nc, micro.Config{Name: "demo", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	err = s.AddEndpoint("echo", svc.Handler(func(e error) { internal = append(internal, e) },
		func(ctx context.Context, req echoReq) (echoResp, error) {
			switch req.Name {
			case "":
				return echoResp{}, svc.Invalid("name is required")
			case "boom":
				return echoResp{}, errors.New("database on fire")
			case "busy":
				return echoResp{}, svc.Unavailable("busy")
			}
			return echoResp{Greeting: "hello " + req.Name}, nil
		}), micro.WithEndpointSubject("svc.demo.echo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	var resp echoResp
	if err := svc.Call(ctx, nc, "svc.demo.echo", echoReq{Name: "ada"}, &resp); err != nil || resp.Greeting != "hello ada" {
		t.Fatalf("Call = %+v, %v", resp, err)
	}
	var apiErr *events.APIError
	err = svc.Call(ctx, nc, "svc.demo.echo", echoReq{}, &resp)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || apiErr.Message != "name is required" {
		t.Errorf("invalid request err = %v", err)
	}
	err = svc.Call(ctx, nc, "svc.demo.echo", echoReq{Name: "boom"}, &resp)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusInternalServerError || apiErr.Message != "internal error" {
		t.Errorf("internal err = %v", err)
	}
	if len(internal) != 1 {
		t.Errorf("internal errors reported %d times, want once", len(internal))
	}
	err = svc.Call(ctx, nc, "svc.demo.echo", map[string]any{"name": "x", "extra": 1}, &resp)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("unknown field err = %v, want 400", err)
	}
	// Postgres cannot store NUL: refused before the function runs, naming
	// the field, in a value or a key of any depth.
	for _, give := range []struct {
		req       any
		wantField string
	}{
		{echoReq{Name: "a\x00b"}, "name"},
		{echoReq{Name: "x", Tags: map[string]string{"k\x00": "v"}}, `tags: key "k\x00"`},
	} {
		err = svc.Call(ctx, nc, "svc.demo.echo", give.req, &resp)
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || apiErr.Code != "invalid_request" ||
			!strings.Contains(apiErr.Message, give.wantField+": a string may not contain the NUL character") {
			t.Errorf("NUL in %+v: err = %v, want 400 invalid_request naming %s", give.req, err, give.wantField)
		}
	}
	err = svc.Call(ctx, nc, "svc.nobody.home", echoReq{Name: "x"}, &resp)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable || !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("no responders err = %v, want a 503 that is nats.ErrNoResponders", err)
	}
	// A service's own 503 is not "nobody there".
	if err := svc.Call(ctx, nc, "svc.demo.echo", echoReq{Name: "busy"}, &resp); errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("a served error = %v matches ErrNoResponders", err)
	}
}
