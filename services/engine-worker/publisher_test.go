package worker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/natstest"
)

// An adapter goroutine may still be emitting when the run's terminal event
// closes the publisher (a child process's output racing its exit). Those
// emits must fail cleanly, and every emit that succeeded must be published.
func TestPublisherCloseRacesEmits(t *testing.T) {
	ctx := context.Background()
	_, js := natstest.Connect(t, natstest.Start(t))
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamEvents, Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		run := "run" + string(rune('a'+round))
		var fenced atomic.Bool
		p, err := newPublisher(js, events.Envelope{Tenant: "t1", Run: run, Epoch: 1}, 0, &fenced)
		if err != nil {
			t.Fatal(err)
		}
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					err := p.emit(events.Notification{Level: events.LevelInfo, Message: "x"})
					if errors.Is(err, errPublisherClosed) {
						return
					}
					if err != nil {
						t.Errorf("emit: %v", err)
						return
					}
					ok.Add(1)
				}
			}()
		}
		time.Sleep(5 * time.Millisecond)
		if err := p.close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		wg.Wait()
		if err := p.emit(events.Notification{Level: events.LevelInfo, Message: "late"}); !errors.Is(err, errPublisherClosed) {
			t.Errorf("emit after close = %v, want errPublisherClosed", err)
		}
		if err := p.close(ctx); !errors.Is(err, errPublisherClosed) {
			t.Errorf("second close = %v, want errPublisherClosed", err)
		}
		s, err := js.Stream(ctx, events.StreamEvents)
		if err != nil {
			t.Fatal(err)
		}
		subj, _ := events.EventsSubject("t1", run)
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subj))
		if err != nil {
			t.Fatal(err)
		}
		if got := int64(info.State.Subjects[subj]); got != ok.Load() {
			t.Fatalf("round %d: %d events stored, %d emits succeeded", round, got, ok.Load())
		}
	}
}
