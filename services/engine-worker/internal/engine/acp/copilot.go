package acp

import (
	"path"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// CopilotPlaceholderKey is the BYOK key Copilot gets when only a base URL
// is configured. Copilot CLI replaces its key's value with ****** wherever
// it appears in its output, so the key must be a string no answer would
// ever contain (a word like "mock" would be blanked out of everything).
const CopilotPlaceholderKey = "clopen-byok-7c1e2f9a4d6b8305"

// Copilot is GitHub Copilot CLI (`copilot --acp --no-auto-update`) with a
// bring-your-own-key provider: COPILOT_OFFLINE=true and COPILOT_PROVIDER_*
// remove every GitHub call. Its 235 MB package unpacks into
// $XDG_CACHE_HOME on first run, so every instance shares one cache dir.
// Its ACP tool calls carry no tool name; harness tools (report_intent…)
// are recognised by title and dropped.
var Copilot = Profile{
	Type: events.EngineCopilot, Name: "GitHub Copilot CLI", Provider: "github-copilot",
	Args:           []string{"--acp", "--no-auto-update", "--disable-client-telemetry"},
	DefaultModel:   "gpt-5.5",
	KeyEnv:         []string{"COPILOT_PROVIDER_API_KEY", "COPILOT_GITHUB_TOKEN", "GH_TOKEN"},
	BaseURLEnv:     []string{"COPILOT_PROVIDER_BASE_URL"},
	PlaceholderKey: CopilotPlaceholderKey,
	// Only its BYOK mode (a base URL given) goes through the model proxy:
	// a GitHub token's login talks to GitHub's own services.
	Scheme: modelproxy.Bearer,
	Setup: func(in SetupInput) ([]string, error) {
		env := []string{"COPILOT_AUTO_UPDATE=false", "COPILOT_MODEL=" + in.Model, "XDG_CACHE_HOME=" + in.CacheDir}
		if in.Cred.BaseURL != "" {
			env = append(env, "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_TYPE=openai",
				"COPILOT_PROVIDER_BASE_URL="+strings.TrimRight(in.Cred.BaseURL, "/"), "COPILOT_PROVIDER_API_KEY="+in.Cred.APIKey)
		} else {
			env = append(env, "COPILOT_GITHUB_TOKEN="+in.Cred.APIKey)
		}
		return env, nil
	},
	// Its version command unpacks the package too.
	PrimeCache: []string{"--version"},
	// Copilot CLI keeps each session in ~/.copilot/session-state/<session>/
	// (events.jsonl, workspace.yaml), beside every other chat's of the
	// instance: only the session's own directory is carried (Match), and a
	// restore adds it without touching the others. session/load reopens it
	// in another directory with its whole history.
	SessionDirs: func(home, _, _, session string) []engine.SessionDir {
		return []engine.SessionDir{{Name: "session-state", Dir: filepath.Join(home, ".copilot", "session-state"),
			Match: copilotSessionFile(session)}}
	},
	Tools: ToolNames{
		"bash": events.ToolBash, "shell": events.ToolBash, "run_in_terminal": events.ToolBash,
		"view": events.ToolRead, "read": events.ToolRead, "read_file": events.ToolRead,
		"create": events.ToolWrite, "write": events.ToolWrite, "write_file": events.ToolWrite, "create_file": events.ToolWrite,
		"str_replace": events.ToolEdit, "str_replace_editor": events.ToolEdit, "edit": events.ToolEdit, "edit_file": events.ToolEdit,
		"insert": events.ToolEdit, "grep": events.ToolGrep, "grep_search": events.ToolGrep, "glob": events.ToolGlob,
		"glob_search": events.ToolGlob, "list": events.ToolList, "list_dir": events.ToolList, "ls": events.ToolList,
		"update_todo": events.ToolTodoWrite, "todo_write": events.ToolTodoWrite, "task": events.ToolAgent,
		"write_agent": events.ToolSendMessage, "list_agents": events.ToolListAgents, "read_agent": events.ToolReadAgent,
		"ask_user": events.ToolAskUserQuestion, "web_search": events.ToolWebSearch, "fetch": events.ToolWebFetch,
		"web_fetch": events.ToolWebFetch, "tool_search": events.ToolToolSearch,
	},
	Drop: map[string]bool{"report_intent": true, "Report intent": true, "task_complete": true, "propose_work": true,
		"fetch_copilot_cli_documentation": true},
	RawToolName: func(_, title string) string { return title },
	// Copilot reports retries and failed model calls as message chunks.
	Notice: func(chunk string) (events.NotificationLevel, string, bool) {
		for prefix, level := range map[string]events.NotificationLevel{"Info: ": events.LevelInfo,
			"Warning: ": events.LevelWarning, "Error: ": events.LevelError} {
			if msg, ok := strings.CutPrefix(chunk, prefix); ok && !strings.Contains(msg, "\n\n") {
				return level, msg, true
			}
		}
		return "", "", false
	},
	// Its retry notices do not name the status; its process log does.
	RetryLog: func(home, _ string) string { return filepath.Join(home, ".copilot", "logs", "process-*.log") },
	Notes:    "Resume: in the warm process, else session/load (full replay, dropped). No fork.",
}

// copilotSessionFile matches the files of Copilot session id in its
// session-state directory, less the locks of the process that had it open
// (inuse.<pid>.lock), which would claim it for a process gone with its
// worker.
func copilotSessionFile(id string) func(rel string) bool {
	return func(rel string) bool {
		first, rest, _ := strings.Cut(rel, "/")
		return engine.PlainName(id) && first == id && !strings.HasPrefix(path.Base(rest), "inuse.")
	}
}
