package pi

import (
	"clopen.dev/services/engine-worker/internal/engine"
)

// SessionState implements engine.Sessions. pi keeps the sessions of a
// project in one directory of the instance's home,
// <home>/sessions/<project>/, a <time>_<session>.jsonl each; a resumed
// chat forks the session into a new file holding its history. The
// directory is shared by the project's chats: only the file of the
// session the turn ended on is carried (Match), and a restore adds it.
func (e *Engine) SessionState(req engine.Request, session string) []engine.SessionDir {
	h := newHome(e.cfg.StateDir, e.key.Tenant, e.key.Account, req.ConfigDir)
	return []engine.SessionDir{{Name: "sessions", Dir: h.sessions(req.ProjectID), Match: engine.NamesSession(session)}}
}

// Forget implements engine.Sessions: the chat's warm pi is stopped, so
// the next turn loads the session from its restored file.
func (e *Engine) Forget(chat string) { e.Procs.RetireKey(chat) }
