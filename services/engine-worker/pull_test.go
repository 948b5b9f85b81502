package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
)

// jobConsumers makes a stream of jobs with one durable consumer per engine,
// configured as the worker's are (explicit ack, 30 s AckWait).
func jobConsumers(t *testing.T, js jetstream.JetStream, engines ...string) []jetstream.Consumer {
	t.Helper()
	ctx := context.Background()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TESTJOBS", Subjects: []string{"testjob.>"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Consumer
	for _, e := range engines {
		c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "engine-" + e, FilterSubject: "testjob." + e,
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// A stopping worker's pull loops end within one fetch (a second), however
// many engines it offers: none starts another fetch after the stop.
func TestPullStopsWithinOneFetch(t *testing.T) {
	ns := natstest.Start(t)
	_, js := natstest.Connect(t, ns)
	engines := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	consumers := jobConsumers(t, js, engines...)
	w := &Worker{slots: make(chan struct{}, 4), log: logging.Discard()}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	returned := make(chan struct{})
	var loops sync.WaitGroup
	for i, c := range consumers {
		loops.Add(1)
		go func() {
			defer loops.Done()
			_ = w.pull(ctx, context.Background(), &wg, events.EngineType(engines[i]), c)
		}()
	}
	go func() { loops.Wait(); close(returned) }()
	time.Sleep(1500 * time.Millisecond) // every loop is in a fetch, some past their first
	stopped := time.Now()
	stop()
	select {
	case <-returned:
		t.Logf("%d pull loops returned %v after the stop", len(engines), time.Since(stopped).Round(time.Millisecond))
	case <-time.After(1800 * time.Millisecond):
		t.Fatalf("pull loops still running %v after the stop: a loop started another fetch", time.Since(stopped))
	}
	if n := len(w.slots); n != 0 {
		t.Errorf("%d slots still held after the loops returned", n)
	}
}

// A job that reaches a pull after its worker began to stop is handed back
// (Nak) at once: it is neither started on the stopping worker nor left to
// wait out the AckWait.
func TestPullHandsBackAJobThatArrivesWhileStopping(t *testing.T) {
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	c := jobConsumers(t, js, "a")[0]
	w := &Worker{slots: make(chan struct{}, 1), log: logging.Discard()}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		_ = w.pull(ctx, context.Background(), &wg, "a", c) // handle would panic on this bare worker
	}()
	waitForPullRequest(t, c)
	stop()
	if err := nc.Publish("testjob.a", []byte(`{"job":1}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	case <-time.After(3 * time.Second):
		t.Fatal("pull did not return after the stop")
	}
	wg.Wait()

	batch, err := c.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		md, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if md.NumDelivered != 2 {
			t.Errorf("delivery %d, want 2: the stopping pull should have received the job and handed it back", md.NumDelivered)
		}
		_ = msg.Ack()
	}
	if got != 1 {
		t.Fatalf("got %d jobs after the stop, want the one handed back at once (err %v)", got, batch.Error())
	}
}

// waitForPullRequest waits until the consumer holds a fetch waiting for a job.
func waitForPullRequest(t *testing.T, c jetstream.Consumer) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		info, err := c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.NumWaiting > 0 {
			return
		}
	}
	t.Fatal("no fetch reached the consumer")
}
