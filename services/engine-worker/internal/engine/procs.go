package engine

import (
	"context"
	"sync"
	"time"
)

// Proc is what Procs needs of an adapter's process (*Child has all but
// comparable, which a pointer type is).
type Proc interface {
	comparable
	Stop(ctx context.Context)
	Exited() bool
}

// Procs keeps an adapter instance's processes: the ones turns are using, and
// at most one warm process per chat between its turns, stopped after an
// idle timeout. A turn takes its chat's warm process when it fits (started
// the same way, still alive) and skips the CLI's start-up; taking removes
// it, so no two turns share a process. Dispose stops them all.
type Procs[P Proc] struct {
	idleTimeout time.Duration

	mu       sync.Mutex
	idle     map[string]*idleProc[P] // warm processes by chat session
	active   map[P]struct{}          // in use by a turn
	bg       sync.WaitGroup          // processes being stopped
	disposed bool
}

type idleProc[P Proc] struct {
	p     P
	timer *time.Timer // retires it after the idle timeout
}

// NewProcs returns an empty set whose warm processes live idleTimeout.
func NewProcs[P Proc](idleTimeout time.Duration) *Procs[P] {
	return &Procs[P]{idleTimeout: idleTimeout, idle: map[string]*idleProc[P]{}, active: map[P]struct{}{}}
}

// Take hands the chat's warm process to a turn when fits says it was
// started the way the turn would start one and it is alive; one that does
// not fit is retired. ok is false when there is none to take.
func (s *Procs[P]) Take(chat string, fits func(P) bool) (p P, ok bool) {
	s.mu.Lock()
	ip := s.idle[chat]
	delete(s.idle, chat)
	s.mu.Unlock()
	if ip == nil {
		return p, false
	}
	ip.timer.Stop()
	if ip.p.Exited() || !fits(ip.p) {
		s.Retire(ip.p)
		return p, false
	}
	return ip.p, true
}

// Use records p as in use by a turn, so that Dispose stops it.
func (s *Procs[P]) Use(p P) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active[p] = struct{}{}
}

// Release ends a turn's use of p: it is kept warm for the chat's next turn
// when keep is true (and the set is still in service), retired otherwise.
func (s *Procs[P]) Release(p P, chat string, keep bool) {
	s.mu.Lock()
	delete(s.active, p)
	s.mu.Unlock()
	if keep {
		s.park(chat, p)
	} else {
		s.Retire(p)
	}
}

// park keeps p for the chat's next turn, replacing (and stopping) the one
// parked before.
func (s *Procs[P]) park(chat string, p P) {
	ip := &idleProc[P]{p: p}
	s.mu.Lock()
	if s.disposed {
		s.mu.Unlock()
		s.Retire(p)
		return
	}
	prev := s.idle[chat]
	s.idle[chat] = ip
	ip.timer = time.AfterFunc(s.idleTimeout, func() { s.expire(chat, ip) })
	s.mu.Unlock()
	if prev != nil {
		prev.timer.Stop()
		s.Retire(prev.p)
	}
}

// expire retires a warm process its chat did not use in time.
func (s *Procs[P]) expire(chat string, ip *idleProc[P]) {
	s.mu.Lock()
	if s.idle[chat] != ip {
		s.mu.Unlock()
		return
	}
	delete(s.idle, chat)
	s.mu.Unlock()
	s.Retire(ip.p)
}

// Retire stops p in the background; Dispose waits for it.
func (s *Procs[P]) Retire(p P) {
	s.bg.Add(1)
	go func() { defer s.bg.Done(); p.Stop(context.Background()) }()
}

// Warm reports how many warm processes the set holds.
func (s *Procs[P]) Warm() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.idle)
}

// Dispose stops every process, busy or warm, and waits for them (or ctx).
// Processes released afterwards are stopped, never kept.
func (s *Procs[P]) Dispose(ctx context.Context) error {
	s.mu.Lock()
	s.disposed = true
	var all []P
	for chat, ip := range s.idle {
		ip.timer.Stop()
		all = append(all, ip.p)
		delete(s.idle, chat)
	}
	for p := range s.active {
		all = append(all, p)
	}
	s.mu.Unlock()
	for _, p := range all {
		s.Retire(p)
	}
	return Wait(ctx, &s.bg)
}

// Wait waits for wg, or until ctx ends (its cause is the error): how an
// adapter's Dispose waits for the processes it is stopping.
func Wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
