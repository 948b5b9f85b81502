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

func TestProcsShared(t *testing.T) {
	var retired atomic.Int32
	s := NewProcs[*fakeProc](time.Minute, ProcsOptions[*fakeProc]{Shared: true,
		Retire: func(p *fakeProc) { retired.Add(1); p.Stop(context.Background()) }})
	a, b, dead := &fakeProc{name: "a"}, &fakeProc{name: "b"}, &fakeProc{name: "dead"}
	s.Release(a, "spec", true)
	s.Release(b, "spec", true)
	if s.Warm() != 2 || a.stopped.Load() {
		t.Fatalf("warm = %d, a stopped %v: a shared key keeps both", s.Warm(), a.stopped.Load())
	}
	// The one that fits is taken; the other stays for another turn.
	got, ok := s.Take("spec", func(p *fakeProc) bool { return p == b })
	if !ok || got != b || s.Warm() != 1 || a.stopped.Load() {
		t.Fatalf("Take = %v, %v; warm %d, a stopped %v", got, ok, s.Warm(), a.stopped.Load())
	}
	if _, ok := s.Take("spec", func(*fakeProc) bool { return false }); ok || s.Warm() != 1 {
		t.Fatalf("took one that does not fit, or retired it (warm %d)", s.Warm())
	}
	s.Release(dead, "spec", true)
	dead.dead = true // it exits while warm
	if got, ok := s.Take("spec", func(*fakeProc) bool { return true }); !ok || got != a {
		t.Fatalf("Take = %v, %v, want a", got, ok)
	}
	waitStopped(t, dead)
	if s.Warm() != 0 || retired.Load() != 1 {
		t.Fatalf("warm = %d, retired %d: the dead one goes through Retire", s.Warm(), retired.Load())
	}
	if st := s.Stats(); st.WarmHits != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestProcsRespawn(t *testing.T) {
	s := NewProcs[*fakeProc](time.Minute)
	old := &fakeProc{name: "old"}
	gen := s.Begin("chat")
	s.Use(old)
	started := make(chan *fakeProc, 1)
	s.Respawn(old, "chat", gen, func() (*fakeProc, error) {
		if !old.stopped.Load() {
			t.Error("the next process started before the old one was retired")
		}
		p := &fakeProc{name: "spare"}
		started <- p
		return p, nil
	})
	spare := <-started
	deadline := time.Now().Add(5 * time.Second)
	for s.Warm() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the spare was not kept")
		}
		time.Sleep(5 * time.Millisecond)
	}
	got, ok := s.Take("chat", func(p *fakeProc) bool { return true })
	if !ok || got != spare {
		t.Fatalf("Take = %v, %v, want the spare", got, ok)
	}

	// A spare started for a turn that is no longer the chat's latest is
	// dropped: the newer turn has already decided how to run.
	gen1 := s.Begin("chat")
	s.Begin("chat")
	s.Respawn(got, "chat", gen1, func() (*fakeProc, error) {
		t.Error("started a spare for a turn that is not the latest")
		return nil, errors.New("not the latest")
	})
	waitStopped(t, got)
	gen3 := s.Begin("chat")
	second, stale := &fakeProc{name: "second"}, &fakeProc{name: "stale"}
	starting, begun := make(chan struct{}), make(chan struct{})
	s.Respawn(second, "chat", gen3, func() (*fakeProc, error) { close(starting); <-begun; return stale, nil })
	<-starting
	s.Begin("chat") // a fourth turn begins while the third's spare starts
	close(begun)
	waitStopped(t, second)
	waitStopped(t, stale)
	if s.Warm() != 0 {
		t.Fatalf("warm = %d, want none", s.Warm())
	}

	// Without a start (the turn left nothing to resume) nothing is kept.
	last := &fakeProc{name: "last"}
	s.Respawn(last, "chat", s.Begin("chat"), nil)
	waitStopped(t, last)
	if err := s.Dispose(context.Background()); err != nil || s.Warm() != 0 {
		t.Fatalf("Dispose = %v, warm %d", err, s.Warm())
	}
}

func TestProcsRespawnIdleTimeoutAndDispose(t *testing.T) {
	s := NewProcs[*fakeProc](50 * time.Millisecond)
	spare := &fakeProc{name: "spare"}
	s.Respawn(&fakeProc{name: "old"}, "chat", s.Begin("chat"), func() (*fakeProc, error) { return spare, nil })
	waitStopped(t, spare) // retired by the idle timeout
	if s.Warm() != 0 {
		t.Fatalf("warm = %d after the idle timeout", s.Warm())
	}
	// A spare whose start outlives Dispose is stopped, not kept.
	s = NewProcs[*fakeProc](time.Minute)
	late, starting := &fakeProc{name: "late"}, make(chan struct{})
	s.Respawn(&fakeProc{name: "old"}, "chat", s.Begin("chat"), func() (*fakeProc, error) {
		close(starting)
		time.Sleep(50 * time.Millisecond)
		return late, nil
	})
	<-starting
	if err := s.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !late.stopped.Load() || s.Warm() != 0 {
		t.Fatalf("late stopped %v, warm %d", late.stopped.Load(), s.Warm())
	}
}

// TestProcsRetireKey: only the warm processes of the chat named are
// stopped, and they are stopped when RetireKey returns (the worker then
// replaces their files); other chats' stay warm.
func TestProcsRetireKey(t *testing.T) {
	s := NewProcs[*fakeProc](time.Minute)
	a, b := &fakeProc{name: "a"}, &fakeProc{name: "b"}
	s.Use(a)
	s.Use(b)
	s.Release(a, "chat1", true)
	s.Release(b, "chat2", true)
	s.RetireKey("chat1")
	if !a.stopped.Load() {
		t.Fatal("RetireKey returned before the chat's warm process was stopped")
	}
	if b.stopped.Load() || s.Warm() != 1 {
		t.Fatalf("b stopped %v, warm = %d: want b kept warm", b.stopped.Load(), s.Warm())
	}
	if _, ok := s.Take("chat1", func(*fakeProc) bool { return true }); ok {
		t.Fatal("a retired process was taken")
	}
}
