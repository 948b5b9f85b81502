package engine

// SessionDir is one directory of an engine's native session state (its
// transcripts, thread files, session databases) for one chat. The worker
// captures it into the chat's snapshot after every turn and restores it
// before a turn on a worker that lacks that snapshot, so a follow-up turn
// resumes its engine session wherever it runs.
type SessionDir struct {
	// Name identifies the directory across workers and must be stable: the
	// path may differ from one worker to the next (it can depend on the
	// workspace's path), the name may not.
	Name string
	// Dir is where the directory is on this worker.
	Dir string
	// Match, when set, keeps only the files of the chat: it gets each
	// file's slash-separated path relative to Dir. Nil keeps every file.
	Match func(rel string) bool
}

// Sessions is implemented by an engine that keeps its sessions in files.
// An engine without it (the scripted engine) has nothing to carry.
type Sessions interface {
	// SessionState names the state directories of req's chat: where its
	// engine session lives for req.Workspace. session is the engine session
	// the turn ended on (its result's session id), "" when the worker only
	// restores; Dir must not depend on it, Match may.
	SessionState(req Request, session string) []SessionDir
	// Forget stops what the instance keeps warm for chat (Clopen's chat
	// session id) and returns once it is stopped: the worker calls it
	// before it replaces the chat's files with those of another turn (a
	// later one that ran on another worker, or an earlier one for a fork),
	// which a warm process would otherwise go on from, or write over.
	Forget(chat string)
}
