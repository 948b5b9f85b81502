package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"clopen.dev/pkg/events"
)

type countingEngine struct {
	disposed atomic.Int32
}

func (e *countingEngine) Type() events.EngineType { return events.EngineScripted }
func (e *countingEngine) Run(context.Context, Request, Emit) error {
	return nil
}
func (e *countingEngine) Dispose(context.Context) error { e.disposed.Add(1); return nil }

func TestPoolConcurrentFirstUseSharesOneCreation(t *testing.T) {
	var created atomic.Int32
	gate := make(chan struct{})
	p := NewPool(map[events.EngineType]Factory{events.EngineScripted: func(ctx context.Context, k Key) (Engine, error) {
		created.Add(1)
		<-gate
		return &countingEngine{}, nil
	}})
	key := Key{Engine: events.EngineScripted, Tenant: "t"}
	var wg sync.WaitGroup
	engines := make([]Engine, 8)
	for i := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, release, err := p.Acquire(context.Background(), key)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			engines[i] = e
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(gate)
	wg.Wait()
	if n := created.Load(); n != 1 {
		t.Fatalf("factory ran %d times, want 1", n)
	}
	for _, e := range engines[1:] {
		if e != engines[0] {
			t.Fatal("concurrent callers got different instances")
		}
	}
}

func TestPoolDoesNotCacheFailure(t *testing.T) {
	fail := true
	p := NewPool(map[events.EngineType]Factory{events.EngineScripted: func(context.Context, Key) (Engine, error) {
		if fail {
			return nil, errors.New("not installed")
		}
		return &countingEngine{}, nil
	}})
	key := Key{Engine: events.EngineScripted}
	if _, _, err := p.Acquire(context.Background(), key); err == nil {
		t.Fatal("first Acquire succeeded, want the factory error")
	}
	fail = false // the engine was installed meanwhile
	e, release, err := p.Acquire(context.Background(), key)
	if err != nil || e == nil {
		t.Fatalf("second Acquire = %v, %v; want an instance", e, err)
	}
	release()
	if _, _, err := p.Acquire(context.Background(), Key{Engine: "codex"}); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("unknown engine err = %v", err)
	}
}

func TestPoolRetireWaitsForLastRun(t *testing.T) {
	var made []*countingEngine
	p := NewPool(map[events.EngineType]Factory{events.EngineScripted: func(context.Context, Key) (Engine, error) {
		e := &countingEngine{}
		made = append(made, e)
		return e, nil
	}})
	key := Key{Engine: events.EngineScripted, Tenant: "t"}
	_, releaseA, _ := p.Acquire(context.Background(), key)
	_, releaseB, _ := p.Acquire(context.Background(), key)
	p.Retire(events.EngineScripted, "")
	if made[0].disposed.Load() != 0 {
		t.Fatal("busy instance disposed at retirement")
	}
	fresh, releaseC, _ := p.Acquire(context.Background(), key)
	if fresh == Engine(made[0]) {
		t.Fatal("Acquire after Retire returned the retired instance")
	}
	releaseA()
	if made[0].disposed.Load() != 0 {
		t.Fatal("retired instance disposed while a run still used it")
	}
	releaseB()
	releaseB() // double release is harmless
	if made[0].disposed.Load() != 1 {
		t.Fatalf("retired instance disposed %d times after its last run, want 1", made[0].disposed.Load())
	}
	releaseC()
	p.Retire(events.EngineScripted, "t")
	if made[1].disposed.Load() != 1 {
		t.Error("idle instance not disposed at once on Retire")
	}
}
