package acp

import (
	"slices"
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
)

// SessionState implements engine.Sessions through the profile's
// SessionDirs, under the instance's home.
func (e *Engine) SessionState(req engine.Request, session string) []engine.SessionDir {
	if e.p.SessionDirs == nil {
		return nil
	}
	return e.p.SessionDirs(e.home, req.SessionID, req.Workspace, session)
}

// chatDir is the SessionDirs of an agent given a directory of its own for
// each chat (dirOf: where under home, "" for none): that directory, whole,
// as the state named name.
func chatDir(name string, dirOf func(home, chat string) string) func(home, chat, workspace, session string) []engine.SessionDir {
	return func(home, chat, _, _ string) []engine.SessionDir {
		if dir := dirOf(home, chat); dir != "" {
			return []engine.SessionDir{{Name: name, Dir: dir}}
		}
		return nil
	}
}

// Forget implements engine.Sessions: the chat's warm processes are
// stopped. The worker calls it before restoring the chat's session files
// from a snapshot (another worker's, or an earlier turn's for a fork): a
// process that still has the session open would go on from what it holds
// in memory (an agent that cannot fork, like Qwen Code, keeps one session
// id for every turn), or write over the restored files (OpenCode's
// database); a new one loads the restored files.
func (e *Engine) Forget(chat string) {
	e.mu.Lock()
	c := e.specs[chat]
	delete(e.specs, chat)
	e.mu.Unlock()
	for _, spec := range c.specs {
		e.Procs.RetireKey(spec)
	}
}

// chatSpecs are the launch specs of a chat's processes, and when a turn
// last used one.
type chatSpecs struct {
	specs []string
	used  time.Time
}

// usedSpec records that a turn of chat runs a process started as spec, and
// forgets chats none of whose processes can still be warm.
func (e *Engine) usedSpec(chat, spec string) {
	if chat == "" {
		return
	}
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.specs[chat]
	if !slices.Contains(c.specs, spec) {
		c.specs = append(c.specs, spec)
	}
	c.used = now
	e.specs[chat] = c
	if len(e.specs)%256 == 0 {
		keep := 2 * max(e.cfg.IdleTimeout, engine.DefaultIdleTimeout)
		for id, c := range e.specs {
			if now.Sub(c.used) > keep {
				delete(e.specs, id)
			}
		}
	}
}
