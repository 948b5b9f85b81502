package acp

import "clopen.dev/services/engine-worker/internal/engine"

// SessionState implements engine.Sessions through the profile's
// SessionDirs, under the instance's home.
func (e *Engine) SessionState(req engine.Request, session string) []engine.SessionDir {
	if e.p.SessionDirs == nil {
		return nil
	}
	return e.p.SessionDirs(e.home, req.Workspace, session)
}

// Forget implements engine.Sessions. Nothing to drop: an agent process
// serves many chats, and every resume opens a new session id, so the one
// a restored chat resumes was made on another worker and no process here
// holds it live; session/load reads it from its files (which the worker
// gave the owner of their directory).
func (e *Engine) Forget(string) {}
