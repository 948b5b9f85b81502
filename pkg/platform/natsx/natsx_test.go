package natsx

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/platform/natstest"
)

func TestWaitKVReturnsOnceTheBucketIsDeclared(t *testing.T) {
	ns := natstest.Start(t)
	_, js := natstest.Connect(t, ns)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "later"})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := WaitKV(ctx, js, "later")
	if err != nil {
		t.Fatal(err)
	}
	if kv.Bucket() != "later" {
		t.Fatalf("bucket %q", kv.Bucket())
	}
}

// A JetStream API slower than one request's timeout — a cluster electing
// leaders — ends that request with a deadline error; the wait goes on while
// its own context lives. The slow path here is a relay in front of the real
// API that holds back its first two answers.
func TestWaitKVOutlastsSlowAnswers(t *testing.T) {
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	if _, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "slow"}); err != nil {
		t.Fatal(err)
	}
	var held atomic.Int32
	sub, err := nc.Subscribe("slow.API.>", func(m *nats.Msg) {
		if held.Add(1) <= 2 {
			return // no answer: the caller's request times out
		}
		reply, err := nc.Request("$JS.API."+strings.TrimPrefix(m.Subject, "slow.API."), m.Data, time.Second)
		if err == nil {
			_ = m.Respond(reply.Data)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	defer func(d time.Duration) { attemptTimeout = d }(attemptTimeout)
	attemptTimeout = 100 * time.Millisecond
	slow, err := jetstream.NewWithAPIPrefix(nc, "slow.API")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := WaitKV(ctx, slow, "slow"); err != nil {
		t.Fatalf("after %d requests: %v", held.Load(), err)
	}
	if n := held.Load(); n < 3 {
		t.Fatalf("answered after %d requests; the first two were held back", n)
	}
}

func TestWaitStreamStopsWithItsContext(t *testing.T) {
	ns := natstest.Start(t)
	_, js := natstest.Connect(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := WaitStream(ctx, js, "NEVER")
	if err == nil || !strings.Contains(err.Error(), "wait for stream NEVER") {
		t.Fatalf("err = %v", err)
	}
}

func TestTransient(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want bool
	}{
		{live, jetstream.ErrStreamNotFound, true},
		{live, jetstream.ErrBucketNotFound, true},
		{live, nats.ErrNoResponders, true},
		{live, nats.ErrTimeout, true},
		{live, context.DeadlineExceeded, true},
		{ended, context.DeadlineExceeded, false},
		{live, errors.New("permissions violation"), false},
	} {
		if got := transient(c.ctx, c.err); got != c.want {
			t.Errorf("transient(ctx live=%v, %v) = %v, want %v", c.ctx.Err() == nil, c.err, got, c.want)
		}
	}
}
