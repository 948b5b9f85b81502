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

// ProcsOptions says how a Procs keeps its warm processes.
type ProcsOptions[P Proc] struct {
	// Shared keeps any number of warm processes per key and leaves the
	// ones a turn does not take (a key is then how they were started, not
	// a chat); otherwise a key has at most one, which a turn takes or
	// retires.
	Shared bool
	// Retire stops a process that is not reused; nil means Stop. A
	// graceful one (closing stdin, so the CLI saves its sessions) goes here.
	Retire func(P)
}

// Stats counts what an adapter instance did with its processes.
type Stats struct {
	Started  int // processes started, warm ones included
	WarmHits int // turns that ran on a warm process
}

// Procs keeps an adapter instance's processes: the ones turns are using, and
// warm ones between turns, retired after an idle timeout. A turn takes a
// warm process of its key when it fits (started the way the turn would
// start one, still alive) and skips the CLI's start-up; taking removes it,
// so no two turns share a process. An adapter that cannot reuse a process
// pre-forks instead (Respawn): right after a turn it starts the process the
// chat's next turn will take. Dispose stops them all.
type Procs[P Proc] struct {
	idleTimeout time.Duration
	opt         ProcsOptions[P]

	mu       sync.Mutex
	idle     map[string][]*idleProc[P] // warm processes by key
	active   map[P]struct{}            // in use by a turn
	gens     map[string]uint64         // turns begun per key, for Respawn
	stats    Stats
	bg       sync.WaitGroup // processes being stopped or started
	disposed bool
}

type idleProc[P Proc] struct {
	p     P
	gen   uint64      // the turn it was started after (Respawn), else 0
	timer *time.Timer // retires it after the idle timeout
}

// NewProcs returns an empty set whose warm processes live idleTimeout (0 or
// less keeps none warm), kept as opt says (at most one is read).
func NewProcs[P Proc](idleTimeout time.Duration, opt ...ProcsOptions[P]) *Procs[P] {
	s := &Procs[P]{idleTimeout: idleTimeout, idle: map[string][]*idleProc[P]{}, active: map[P]struct{}{}, gens: map[string]uint64{}}
	if len(opt) > 0 {
		s.opt = opt[0]
	}
	return s
}

// Take hands a warm process of key to a turn when fits says it was started
// the way the turn would start one and it is alive. In a shared set the
// first that fits is taken and the others stay; otherwise the key's one is
// retired when it does not fit. ok is false when there is none to take.
func (s *Procs[P]) Take(key string, fits func(P) bool) (p P, ok bool) {
	var drop []P
	s.mu.Lock()
	list := s.idle[key]
	var kept []*idleProc[P]
	var took *idleProc[P]
	for _, ip := range list {
		switch {
		case took == nil && !ip.p.Exited() && fits(ip.p):
			took = ip
		case ip.p.Exited() || !s.opt.Shared:
			ip.timer.Stop()
			drop = append(drop, ip.p)
		default:
			kept = append(kept, ip)
		}
	}
	s.setIdle(key, kept)
	if took != nil {
		took.timer.Stop()
		s.stats.WarmHits++
	}
	s.mu.Unlock()
	for _, d := range drop {
		s.retire(d)
	}
	if took == nil {
		return p, false
	}
	return took.p, true
}

// RetireKey retires every warm process of key and returns once they are
// stopped: the caller may then replace the files they had open.
func (s *Procs[P]) RetireKey(key string) {
	s.mu.Lock()
	list := s.idle[key]
	s.setIdle(key, nil)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ip := range list {
		ip.timer.Stop()
		wg.Add(1)
		s.background(func() { defer wg.Done(); s.stop(ip.p) })
	}
	wg.Wait()
}

// setIdle stores key's warm list; s.mu is held.
func (s *Procs[P]) setIdle(key string, list []*idleProc[P]) {
	if len(list) == 0 {
		delete(s.idle, key)
	} else {
		s.idle[key] = list
	}
}

// Use records p as in use by a turn, so that Dispose stops it. It is false
// once the set is disposed: the caller stops p itself.
func (s *Procs[P]) Use(p P) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disposed {
		return false
	}
	s.active[p] = struct{}{}
	return true
}

// Drop ends a turn's use of p without keeping or stopping it: the caller
// stops it (and waits for it, when something must go after it).
func (s *Procs[P]) Drop(p P) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.active, p)
}

// Started counts a process start in Stats.
func (s *Procs[P]) Started() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Started++
}

// Release ends a turn's use of p: it is kept warm under key for a later
// turn when keep is true (and warm processes are on, the set is still in
// service and p alive), retired otherwise.
func (s *Procs[P]) Release(p P, key string, keep bool) {
	s.Drop(p)
	if keep && !p.Exited() {
		s.park(key, p, 0)
	} else {
		s.retire(p)
	}
}

// Begin counts a turn of key and returns its number, for Respawn.
func (s *Procs[P]) Begin(key string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gens[key]++
	return s.gens[key]
}

// Respawn ends turn gen's use of old and, in the background, retires it
// and then (so that what it saved is complete) runs start for key's next
// process, kept warm while gen is still key's latest turn: a process
// started for an older turn is dropped, since a newer turn has already
// decided how to run. A nil start keeps nothing.
func (s *Procs[P]) Respawn(old P, key string, gen uint64, start func() (P, error)) {
	s.Drop(old)
	if start == nil || s.idleTimeout <= 0 {
		s.forget(key, gen)
		s.retire(old)
		return
	}
	s.background(func() {
		s.stop(old)
		if !s.current(key, gen) {
			return
		}
		p, err := start()
		if err != nil {
			s.forget(key, gen)
			return
		}
		if !s.current(key, gen) {
			p.Stop(context.Background())
			return
		}
		s.park(key, p, gen)
	})
}

// current reports whether gen is still key's latest turn and the set is in
// service.
func (s *Procs[P]) current(key string, gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.disposed && s.gens[key] == gen
}

// forget drops the turn count of a key that keeps nothing from turn gen.
func (s *Procs[P]) forget(key string, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gens[key] == gen {
		delete(s.gens, key)
	}
}

// park keeps p warm under key; in a set that is not shared it replaces
// (and retires) the one parked before.
func (s *Procs[P]) park(key string, p P, gen uint64) {
	ip := &idleProc[P]{p: p, gen: gen}
	s.mu.Lock()
	if s.disposed || s.idleTimeout <= 0 {
		s.mu.Unlock()
		s.retire(p)
		return
	}
	prev := s.idle[key]
	if s.opt.Shared {
		s.idle[key] = append(prev, ip)
		prev = nil
	} else {
		s.idle[key] = []*idleProc[P]{ip}
	}
	ip.timer = time.AfterFunc(s.idleTimeout, func() { s.expire(key, ip) })
	s.mu.Unlock()
	for _, old := range prev {
		old.timer.Stop()
		s.retire(old.p)
	}
}

// expire retires a warm process nobody took in time.
func (s *Procs[P]) expire(key string, ip *idleProc[P]) {
	s.mu.Lock()
	list := s.idle[key]
	found := false
	for i, c := range list {
		if c == ip {
			s.setIdle(key, append(list[:i:i], list[i+1:]...))
			found = true
			break
		}
	}
	if found && ip.gen != 0 && s.gens[key] == ip.gen {
		delete(s.gens, key) // the key is idle: forget it
	}
	s.mu.Unlock()
	if found {
		s.retire(ip.p)
	}
}

// retire stops p in the background the way Options.Retire says; Dispose
// waits for it.
func (s *Procs[P]) retire(p P) { s.background(func() { s.stop(p) }) }

func (s *Procs[P]) stop(p P) {
	if s.opt.Retire != nil {
		s.opt.Retire(p)
	} else {
		p.Stop(context.Background())
	}
}

// background runs f in a goroutine Dispose waits for; after Dispose, f
// (only ever a stop, which ends on its own) is not waited for.
func (s *Procs[P]) background(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disposed {
		go f()
		return
	}
	s.bg.Add(1)
	go func() { defer s.bg.Done(); f() }()
}

// Warm reports how many warm processes the set holds.
func (s *Procs[P]) Warm() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, list := range s.idle {
		n += len(list)
	}
	return n
}

// Stats returns the set's counters, for tests and metrics.
func (s *Procs[P]) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Disposed reports whether Dispose was called.
func (s *Procs[P]) Disposed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disposed
}

// Dispose stops every process, busy or warm, and waits for them and for
// the ones being retired or started (or ctx). Processes released
// afterwards are stopped, never kept.
func (s *Procs[P]) Dispose(ctx context.Context) error {
	s.mu.Lock()
	s.disposed = true
	var all []P
	for key, list := range s.idle {
		for _, ip := range list {
			ip.timer.Stop()
			all = append(all, ip.p)
		}
		delete(s.idle, key)
	}
	for p := range s.active {
		all = append(all, p)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.bg.Wait() }()
	return Wait(ctx, &wg)
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
