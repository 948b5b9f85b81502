package claude

import (
	"context"
	"time"
)

// spare is a warm process waiting for the next turn of one chat session. It
// was started with --resume <resume> --fork-session and initialized, so the
// turn only writes its prompt.
type spare struct {
	p     *proc
	gen   uint64      // the turn after which it was started
	timer *time.Timer // retires it after the idle timeout
}

// begin counts a turn of chat and returns its number. A spare started for an
// older turn is not kept: a newer turn has already decided how to run.
func (e *Engine) begin(chat string) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gens[chat]++
	return e.gens[chat]
}

// takeSpare hands the chat's warm process to a turn when it resumes the
// session the turn resumes and was started the same way; a spare that does
// not fit is stopped. Taking removes it, so no two turns share a process.
func (e *Engine) takeSpare(chat, resume, spec string) *proc {
	e.mu.Lock()
	s := e.spares[chat]
	delete(e.spares, chat)
	e.mu.Unlock()
	if s == nil {
		return nil
	}
	s.timer.Stop()
	if resume == "" || s.p.resume != resume || s.p.spec != spec || s.p.Exited() {
		go s.p.Stop(context.Background())
		return nil
	}
	e.mu.Lock()
	e.stats.WarmHits++
	e.mu.Unlock()
	return s.p
}

// respawn retires the process of a finished turn and starts the chat's
// spare: resuming and forking session, the one the turn ended in. The old
// process exits first, so its session file is complete before the new one
// reads it.
func (e *Engine) respawn(old *proc, chat string, gen uint64, session string, args, env []string, dir, spec string) {
	old.Retire(e.cfg.KillGrace)
	if !e.current(chat, gen) {
		return
	}
	p, err := e.start(args, env, dir, session, spec)
	if err != nil {
		e.log.Warn("claude: start warm process", "err", err)
		e.forget(chat, gen)
		return
	}
	s := &spare{p: p, gen: gen}
	e.mu.Lock()
	if e.disposed || e.gens[chat] != gen {
		e.mu.Unlock()
		p.Stop(context.Background())
		return
	}
	prev := e.spares[chat]
	e.spares[chat] = s
	s.timer = time.AfterFunc(e.cfg.IdleTimeout, func() { e.expire(chat, s) })
	e.mu.Unlock()
	if prev != nil {
		prev.timer.Stop()
		prev.p.Stop(context.Background())
	}
}

// current reports whether gen is still the chat's latest turn and the
// engine is in service.
func (e *Engine) current(chat string, gen uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.disposed && e.gens[chat] == gen
}

// forget drops the turn count of an idle chat that keeps no spare.
func (e *Engine) forget(chat string, gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gens[chat] == gen {
		delete(e.gens, chat)
	}
}

// expire retires an unused spare.
func (e *Engine) expire(chat string, s *spare) {
	e.mu.Lock()
	if e.spares[chat] != s {
		e.mu.Unlock()
		return
	}
	delete(e.spares, chat)
	if e.gens[chat] == s.gen {
		delete(e.gens, chat) // the chat is idle: forget it
	}
	e.mu.Unlock()
	s.p.Stop(context.Background())
}

// Warm reports how many warm processes the instance holds.
func (e *Engine) Warm() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.spares)
}
