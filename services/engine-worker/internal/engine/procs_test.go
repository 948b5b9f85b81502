package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeProc stands for an adapter's process.
type fakeProc struct {
	name    string
	stopped atomic.Bool
	dead    bool
}

func (p *fakeProc) Stop(context.Context) { p.stopped.Store(true) }
func (p *fakeProc) Exited() bool         { return p.dead || p.stopped.Load() }

func waitStopped(t *testing.T, p *fakeProc) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !p.stopped.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%s was not stopped", p.name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProcsWarmForTheSameChat(t *testing.T) {
	s := NewProcs[*fakeProc](time.Minute)
	a := &fakeProc{name: "a"}
	s.Use(a)
	s.Release(a, "chat1", true)
	if s.Warm() != 1 {
		t.Fatalf("warm = %d", s.Warm())
	}
	if _, ok := s.Take("chat2", func(*fakeProc) bool { return true }); ok {
		t.Fatal("another chat took chat1's process")
	}
	got, ok := s.Take("chat1", func(*fakeProc) bool { return true })
	if !ok || got != a || a.stopped.Load() {
		t.Fatalf("Take = %v, %v (stopped %v)", got, ok, a.stopped.Load())
	}
	if _, ok := s.Take("chat1", func(*fakeProc) bool { return true }); ok {
		t.Fatal("one warm process went to two turns")
	}
}

func TestProcsRetireWhatDoesNotFit(t *testing.T) {
	s := NewProcs[*fakeProc](time.Minute)
	other, dead := &fakeProc{name: "other spec"}, &fakeProc{name: "dead", dead: true}
	s.Release(other, "c", true)
	if _, ok := s.Take("c", func(*fakeProc) bool { return false }); ok {
		t.Fatal("took a process started another way")
	}
	waitStopped(t, other)
	s.Release(dead, "c", true)
	if _, ok := s.Take("c", func(*fakeProc) bool { return true }); ok {
		t.Fatal("took a process that exited")
	}
	// Parking over a warm process retires the older one; not keeping retires.
	first, second, third := &fakeProc{name: "first"}, &fakeProc{name: "second"}, &fakeProc{name: "third"}
	s.Release(first, "d", true)
	s.Release(second, "d", true)
	waitStopped(t, first)
	s.Release(third, "e", false)
	waitStopped(t, third)
	if s.Warm() != 1 || second.stopped.Load() {
		t.Fatalf("warm = %d, second stopped %v", s.Warm(), second.stopped.Load())
	}
}

func TestProcsIdleTimeout(t *testing.T) {
	s := NewProcs[*fakeProc](50 * time.Millisecond)
	p := &fakeProc{name: "idle"}
	s.Release(p, "c", true)
	waitStopped(t, p)
	if s.Warm() != 0 {
		t.Fatalf("warm = %d after the idle timeout", s.Warm())
	}
}

func TestProcsDispose(t *testing.T) {
	s := NewProcs[*fakeProc](time.Minute)
	busy, warm, late := &fakeProc{name: "busy"}, &fakeProc{name: "warm"}, &fakeProc{name: "late"}
	s.Use(busy)
	s.Release(warm, "c", true)
	s.Use(late)
	s.Release(late, "d", false)
	if err := s.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !busy.stopped.Load() || !warm.stopped.Load() || !late.stopped.Load() || s.Warm() != 0 {
		t.Fatalf("after Dispose: busy %v warm %v late %v, %d warm", busy.stopped.Load(), warm.stopped.Load(), late.stopped.Load(), s.Warm())
	}
	// A turn that ends after Dispose does not park its process.
	after := &fakeProc{name: "after"}
	s.Release(after, "c", true)
	waitStopped(t, after)
	if s.Warm() != 0 {
		t.Fatal("parked a process after Dispose")
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("shutting down"))
	if err := Wait(ctx, &wg); err == nil || err.Error() != "shutting down" {
		t.Fatalf("Wait = %v, want the context's cause", err)
	}
	wg.Done()
	if err := Wait(context.Background(), &wg); err != nil {
		t.Fatalf("Wait after Done = %v", err)
	}
}
