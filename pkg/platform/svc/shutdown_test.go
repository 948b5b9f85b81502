package svc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/svc"
)

// instance is one replica of a demo service on its own connection, whose
// svc.demo.slow answers after 20 ms.
type instance struct {
	nc   *nats.Conn
	stop context.CancelFunc
	done chan struct{}
}

// startInstance runs a replica the way the services run: until ctx ends,
// then it shuts down and its connection closes.
func startInstance(t *testing.T, ns interface{ ClientURL() string }) *instance {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{nc: nc, stop: cancel, done: make(chan struct{})}
	s, err := micro.AddService(nc, micro.Config{Name: "demo", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServer(ctx, nc, s, verifier)
	err = s.AddEndpoint("slow", srv.Bind(svc.Handler(nil, func(ctx context.Context, req echoReq) (echoResp, error) {
		select {
		case <-time.After(20 * time.Millisecond):
			return echoResp{Greeting: "hello " + req.Name}, nil
		case <-ctx.Done():
			return echoResp{}, ctx.Err()
		}
	})), micro.WithEndpointSubject("svc.demo.slow"))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // subscribed before the first call
		t.Fatal(err)
	}
	go func() {
		defer close(in.done)
		<-ctx.Done()
		srv.Stop()
		nc.Close()
	}()
	t.Cleanup(func() { cancel(); <-in.done })
	return in
}

// A replica that stops while requests stream at it loses none of them: it
// stops taking requests first, serves those it already took, and only then
// goes. Callers see no 503 and no timeout while another replica runs.
func TestAStoppingReplicaDropsNoRequest(t *testing.T) {
	ns := natstest.Start(t)
	client, _ := natstest.Connect(t, ns)
	leaving := startInstance(t, ns)
	startInstance(t, ns)

	var (
		wg     sync.WaitGroup
		failed atomic.Int32
		calls  atomic.Int32
		errs   = make(chan error, 16)
	)
	quit := make(chan struct{})
	for c := range 16 { // 16 callers, each one request after another
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-quit:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				var resp echoResp
				err := svc.Call(signed(t, ctx), client, "svc.demo.slow", echoReq{Name: fmt.Sprint(c, "-", i)}, &resp)
				cancel()
				calls.Add(1)
				if err != nil {
					if failed.Add(1) <= 16 {
						errs <- err
					}
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	leaving.stop()
	<-leaving.done
	time.Sleep(300 * time.Millisecond)
	close(quit)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d calls failed while a replica stopped", n, calls.Load())
	}
}

// A handler that fails because its caller's deadline passed (a query
// cancelled under it) answers 504, not an internal error, and nothing is
// reported as internal.
func TestAHandlerPastItsDeadlineAnswers504(t *testing.T) {
	nc, _ := natstest.Connect(t, natstest.Start(t))
	s, err := micro.AddService(nc, micro.Config{Name: "demo", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServer(t.Context(), nc, s, verifier)
	defer srv.Stop()
	var internal atomic.Int32
	err = s.AddEndpoint("stuck", srv.Bind(svc.Handler(func(error) { internal.Add(1) }, func(ctx context.Context, _ struct{}) (struct{}, error) {
		<-ctx.Done()
		return struct{}{}, fmt.Errorf("query: %w", ctx.Err())
	})), micro.WithEndpointSubject("svc.demo.stuck"))
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg("svc.demo.stuck")
	msg.Data = []byte("{}")
	msg.Header.Set(svc.TimeoutHeader, "200") // the handler's deadline; we wait longer for its answer
	msg.Header.Set(svc.TokenHeader, svc.TokenFrom(signed(t, t.Context())))
	reply, err := nc.RequestMsg(msg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != "504" {
		t.Errorf("a handler past its deadline answered %s %s, want 504", code, reply.Data)
	}
	if n := internal.Load(); n != 0 {
		t.Errorf("%d internal errors reported for a deadline", n)
	}
}
