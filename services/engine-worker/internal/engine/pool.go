package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"clopen.dev/pkg/events"
)

// Key identifies an engine instance. Instances are never shared across
// tenants or accounts, so credentials and config dirs never mix.
type Key struct {
	Engine  events.EngineType
	Tenant  string
	Account string
}

// Factory builds the instance for key. It may be slow (starting a CLI,
// checking its version); the pool calls it once per key at a time.
type Factory func(ctx context.Context, key Key) (Engine, error)

// Pool holds engine instances, created lazily on first use. Concurrent first
// uses of a key share one creation; a failed creation is not cached, so the
// next use tries again (an engine installed meanwhile just works). Retire
// swaps an instance out and disposes it once its last run has released it.
type Pool struct {
	mu        sync.Mutex
	factories map[events.EngineType]Factory
	slots     map[Key]*slot
	old       map[*slot]struct{} // retired, still running
}

type slot struct {
	ready   chan struct{} // closed when creation finished
	eng     Engine
	err     error
	active  int
	retired bool
}

// NewPool returns a pool that builds instances with factories.
func NewPool(factories map[events.EngineType]Factory) *Pool {
	return &Pool{factories: maps.Clone(factories), slots: map[Key]*slot{}, old: map[*slot]struct{}{}}
}

// Add makes the pool build typ with factory (an engine that became ready
// after the pool was made). It reports false, and changes nothing, when
// the pool has typ already.
func (p *Pool) Add(typ events.EngineType, factory Factory) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.factories[typ]; ok {
		return false
	}
	if p.factories == nil {
		p.factories = map[events.EngineType]Factory{}
	}
	p.factories[typ] = factory
	return true
}

// Remove stops building typ (its install is gone) and retires its
// instances: idle ones are disposed now, busy ones once their turn ends.
// Add can offer typ again later.
func (p *Pool) Remove(typ events.EngineType) {
	p.mu.Lock()
	delete(p.factories, typ)
	p.mu.Unlock()
	p.Retire(typ, "")
}

// ErrUnknownEngine is returned by Acquire for an engine this worker lacks.
var ErrUnknownEngine = errors.New("engine not available on this worker")

// Types returns the engine types the pool can build.
func (p *Pool) Types() []events.EngineType {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]events.EngineType, 0, len(p.factories))
	for t := range p.factories {
		out = append(out, t)
	}
	return out
}

// Acquire returns the instance for key, creating it if needed, and a release
// function the caller must call when its run has ended.
func (p *Pool) Acquire(ctx context.Context, key Key) (Engine, func(), error) {
	p.mu.Lock()
	factory, ok := p.factories[key.Engine]
	p.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s", ErrUnknownEngine, key.Engine)
	}
	for {
		p.mu.Lock()
		s, ok := p.slots[key]
		if !ok {
			s = &slot{ready: make(chan struct{})}
			p.slots[key] = s
			p.mu.Unlock()
			s.eng, s.err = factory(ctx, key)
			p.mu.Lock()
			if s.err != nil && p.slots[key] == s {
				delete(p.slots, key) // never cache a failure
			}
			close(s.ready)
			p.mu.Unlock()
		} else {
			p.mu.Unlock()
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, nil, context.Cause(ctx)
		}
		if s.err != nil {
			return nil, nil, s.err
		}
		p.mu.Lock()
		if s.retired { // retired between creation and now: use the new one
			p.mu.Unlock()
			continue
		}
		s.active++
		p.mu.Unlock()
		var once sync.Once
		return s.eng, func() { once.Do(func() { p.release(s) }) }, nil
	}
}

func (p *Pool) release(s *slot) {
	p.mu.Lock()
	s.active--
	idle := s.retired && s.active == 0
	if idle {
		delete(p.old, s)
	}
	p.mu.Unlock()
	if idle {
		dispose(s.eng)
	}
}

// Retire removes the instances of engine (all tenants and accounts when
// tenant is empty). The next Acquire builds fresh ones; idle instances are
// disposed now, busy ones when their last run releases them.
func (p *Pool) Retire(engine events.EngineType, tenant string) {
	var idle []Engine
	p.mu.Lock()
	for k, s := range p.slots {
		if k.Engine != engine || (tenant != "" && k.Tenant != tenant) {
			continue
		}
		select {
		case <-s.ready:
		default:
			continue // still being created; it will serve the callers waiting on it
		}
		delete(p.slots, k)
		s.retired = true
		if s.active == 0 {
			idle = append(idle, s.eng)
		} else {
			p.old[s] = struct{}{}
		}
	}
	p.mu.Unlock()
	for _, e := range idle {
		dispose(e)
	}
}

// Dispose stops every instance, busy or not: shutdown only.
func (p *Pool) Dispose(ctx context.Context) {
	p.mu.Lock()
	var all []Engine
	for k, s := range p.slots {
		select {
		case <-s.ready:
			if s.err == nil {
				all = append(all, s.eng)
			}
		default:
		}
		delete(p.slots, k)
	}
	for s := range p.old {
		all = append(all, s.eng)
		delete(p.old, s)
	}
	p.mu.Unlock()
	for _, e := range all {
		if d, ok := e.(Disposer); ok {
			_ = d.Dispose(ctx)
		}
	}
}

func dispose(e Engine) {
	if d, ok := e.(Disposer); ok {
		_ = d.Dispose(context.Background())
	}
}
