package codex

import (
	"path/filepath"

	"clopen.dev/services/engine-worker/internal/engine"
)

// SessionState implements engine.Sessions. Codex keeps every thread of
// CODEX_HOME in sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl; a
// resumed chat forks its thread, and the fork's file holds the whole
// history, so the chat's state is the file of the thread its turn ended
// on. The directory may hold other threads (the chat's earlier turns, or
// every chat of the instance when a turn names no ConfigDir): only that
// file is carried (Match), and a restore adds it without touching the
// others.
// The SQLite databases beside it are not carried: they index threads and
// are rebuilt from the rollout files.
func (e *Engine) SessionState(req engine.Request, session string) []engine.SessionDir {
	h := newHome(e.cfg.StateDir, e.key.Tenant, e.key.Account, req.ConfigDir)
	return []engine.SessionDir{{Name: "sessions", Dir: filepath.Join(h.codexHome, "sessions"), Match: engine.NamesSession(session)}}
}

// Forget implements engine.Sessions: the chat's warm app-server is
// stopped, so the next turn forks the thread from its restored file.
func (e *Engine) Forget(chat string) { e.Procs.RetireKey(chat) }
