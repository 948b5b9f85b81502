package svc_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

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
	srv := svc.NewServer(t.Context(), nc, s, verifier)
	defer srv.Stop()
	err = s.AddEndpoint("echo", srv.Bind(svc.Handler(func(e error) { internal = append(internal, e) },
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
		})), micro.WithEndpointSubject("svc.demo.echo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := signed(t, context.Background())

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

// serveWait starts a service whose one endpoint, svc.demo.wait, reports
// its context to seen and then waits for it to end (20 s at most): past
// the caller's deadline it fails, stopped by the service it answers the
// cause.
func serveWait(t *testing.T, ctx context.Context, nc *nats.Conn, seen chan<- context.Context) *svc.Server {
	return serveWaitGrace(t, ctx, nc, seen, svc.StopGrace)
}

// serveWaitGrace is serveWait whose server gives running requests grace
// when it stops.
func serveWaitGrace(t *testing.T, ctx context.Context, nc *nats.Conn, seen chan<- context.Context, grace time.Duration) *svc.Server {
	t.Helper()
	s, err := micro.AddService(nc, micro.Config{Name: "demo", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServerWithGrace(ctx, nc, s, verifier, grace)
	t.Cleanup(srv.Stop)
	err = s.AddEndpoint("wait", srv.Bind(svc.Handler(nil, func(ctx context.Context, _ echoReq) (echoResp, error) {
		seen <- ctx
		select {
		case <-ctx.Done():
			// Like a real handler whose query was cancelled: past the
			// caller's deadline it fails (and Handler makes that a 504,
			// so whichever reaches the caller first, its own timeout or
			// this answer, is a 504); stopped by the service, it answers.
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return echoResp{}, ctx.Err()
			}
			return echoResp{Greeting: ctx.Err().Error()}, nil
		case <-time.After(20 * time.Second):
			return echoResp{Greeting: "never cancelled"}, nil
		}
	})), micro.WithEndpointSubject("svc.demo.wait"))
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// A handler runs under the caller's deadline: it ends when the caller
// stops waiting, not later.
func TestHandlerSeesTheCallersDeadline(t *testing.T) {
	nc, _ := natstest.Connect(t, natstest.Start(t))
	seen := make(chan context.Context, 1)
	srv := serveWait(t, t.Context(), nc, seen)
	defer srv.Stop()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	want, _ := ctx.Deadline()
	callErr := make(chan error, 1)
	go func() { callErr <- svc.Call(signed(t, ctx), nc, "svc.demo.wait", echoReq{}, nil) }()
	hctx := <-seen
	got, ok := hctx.Deadline()
	if !ok {
		t.Fatal("the handler's context has no deadline")
	}
	// The header says the time left, so the handler's deadline is the
	// caller's plus the time the request took to arrive.
	if got.Before(want.Add(-time.Millisecond)) || got.After(want.Add(time.Second)) {
		t.Errorf("handler deadline = %v, want about the caller's %v", got, want)
	}
	select {
	case <-hctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's context did not end after the caller's deadline")
	}
	if !errors.Is(hctx.Err(), context.DeadlineExceeded) {
		t.Errorf("handler ctx err = %v, want deadline exceeded", hctx.Err())
	}
	var apiErr *events.APIError
	if err := <-callErr; !errors.As(err, &apiErr) || apiErr.Status != http.StatusGatewayTimeout {
		t.Errorf("Call = %v, want a 504", err)
	}
}

// A service that stops lets the requests it is serving finish within its
// grace, then cancels them, and Stop waits for them; a request arriving
// afterwards finds no responder.
func TestHandlerIsCancelledAfterTheGrace(t *testing.T) {
	nc, _ := natstest.Connect(t, natstest.Start(t))
	seen := make(chan context.Context, 1)
	ctx, stop := context.WithCancel(t.Context())
	const grace = 500 * time.Millisecond
	srv := serveWaitGrace(t, ctx, nc, seen, grace)

	var reply echoResp
	callErr := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		callErr <- svc.Call(signed(t, cctx), nc, "svc.demo.wait", echoReq{}, &reply)
	}()
	hctx := <-seen
	stopped := time.Now()
	stop()
	select {
	case <-hctx.Done():
		if waited := time.Since(stopped); waited < grace {
			t.Errorf("the running request was cancelled %v after the stop, before its grace of %v", waited, grace)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the running request was never cancelled")
	}
	srv.Stop() // returns only once the handler has
	if !errors.Is(hctx.Err(), context.Canceled) {
		t.Errorf("handler ctx err after shutdown = %v, want canceled", hctx.Err())
	}
	if err := <-callErr; err != nil || reply.Greeting != context.Canceled.Error() {
		t.Errorf("Call = %+v, %v; want the handler's answer after its cancellation", reply, err)
	}
	err := svc.Call(signed(t, t.Context()), nc, "svc.demo.wait", echoReq{}, nil)
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("Call after shutdown = %v, want no responders", err)
	}
}

// A deadline header that is not a number of milliseconds is a 400 naming
// the header.
func TestBadTimeoutHeaderIsInvalid(t *testing.T) {
	nc, _ := natstest.Connect(t, natstest.Start(t))
	seen := make(chan context.Context, 1)
	srv := serveWait(t, t.Context(), nc, seen)
	defer srv.Stop()
	for _, give := range []string{"soon", "-1", "99999999999999999999", "86400001"} {
		msg := nats.NewMsg("svc.demo.wait")
		msg.Data = []byte("{}")
		msg.Header.Set(svc.TimeoutHeader, give)
		msg.Header.Set(svc.TokenHeader, svc.TokenFrom(signed(t, t.Context())))
		reply, err := nc.RequestMsg(msg, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if code := reply.Header.Get(micro.ErrorCodeHeader); code != "400" || !strings.Contains(string(reply.Data), svc.TimeoutHeader) {
			t.Errorf("header %q: reply %s %s, want a 400 naming %s", give, code, reply.Data, svc.TimeoutHeader)
		}
	}
	if len(seen) != 0 {
		t.Error("a request with a bad deadline header reached the handler")
	}
}
