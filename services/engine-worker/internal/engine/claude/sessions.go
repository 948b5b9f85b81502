package claude

import (
	"path/filepath"

	"clopen.dev/services/engine-worker/internal/engine"
)

// SessionState implements engine.Sessions. Claude Code keeps a chat's
// transcripts in <CLAUDE_CONFIG_DIR>/projects/<slug of the working
// directory>/, one <session>.jsonl per turn (every resume forks), with the
// sub-agents' under <session>/. A session workspace is the chat's own, so
// the whole directory is the chat's; its name depends on the workspace's
// path, which is why it is computed for the worker that asks.
func (e *Engine) SessionState(req engine.Request, _ string) []engine.SessionDir {
	return []engine.SessionDir{{Name: "projects", Dir: filepath.Join(e.dirs(req.ConfigDir).config, "projects", engine.PathSlug(req.Workspace))}}
}

// Forget implements engine.Sessions: the chat's warm spare is stopped, so
// the next turn starts a process on the restored files.
func (e *Engine) Forget(chat string) { e.Procs.RetireKey(chat) }
