package acp

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// Qwen is Qwen Code (`qwen --acp --auth-type openai`) against an
// OpenAI-compatible endpoint. Its home needs settings.json selecting the
// openai auth type; the endpoint, key and model are OPENAI_* variables.
// Its updates name the tool in _meta.toolName, and usage rides on an
// empty agent_message_chunk's _meta.usage after each model call.
var Qwen = Profile{
	Type: events.EngineQwen, Name: "Qwen Code", Provider: "openai",
	Args:           []string{"--acp", "--auth-type", "openai"},
	DefaultModel:   "qwen3-coder-plus",
	KeyEnv:         []string{"QWEN_API_KEY", "OPENAI_API_KEY"},
	BaseURLEnv:     []string{"QWEN_BASE_URL", "OPENAI_BASE_URL"},
	Scheme:         modelproxy.Bearer,
	DefaultBaseURL: "https://api.openai.com/v1",
	// Qwen Code keeps a project's chats in ~/.qwen/projects/<slug of the
	// working directory>/chats/<session>.jsonl: a session workspace is the
	// chat's own, so the whole project directory is.
	SessionDirs: func(home, _, workspace, _ string) []engine.SessionDir {
		return []engine.SessionDir{{Name: "projects", Dir: qwenProject(home, workspace)}}
	},
	BeforeReopen: relocateQwenChat,
	Setup: func(in SetupInput) ([]string, error) {
		settings := map[string]any{
			"security":  map[string]any{"auth": map[string]any{"selectedType": "openai"}},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
			"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
			// Retries are the worker's call: a failed model call fails the turn.
			"model": map[string]any{"generationConfig": map[string]any{"maxRetries": in.Retries}},
			// Without tool_search, MCP tools are offered directly instead of
			// deferred behind a search the model must think of calling.
			"tools": map[string]any{"exclude": []string{"tool_search"}},
		}
		if err := writeJSON(filepath.Join(in.Home, ".qwen", "settings.json"), settings); err != nil {
			return nil, err
		}
		env := []string{"OPENAI_API_KEY=" + in.Cred.APIKey, "OPENAI_MODEL=" + in.Model}
		if in.Cred.BaseURL != "" {
			env = append(env, "OPENAI_BASE_URL="+strings.TrimRight(in.Cred.BaseURL, "/"))
		}
		return env, nil
	},
	Tools: ToolNames{
		"read_file": events.ToolRead, "read_many_files": events.ToolRead, "write_file": events.ToolWrite,
		"replace": events.ToolEdit, "edit": events.ToolEdit, "list_directory": events.ToolList, "ls": events.ToolList,
		"glob": events.ToolGlob, "grep_search": events.ToolGrep, "search_file_content": events.ToolGrep, "grep": events.ToolGrep,
		"run_shell_command": events.ToolBash, "shell": events.ToolBash, "execute": events.ToolBash,
		"web_fetch": events.ToolWebFetch, "google_web_search": events.ToolWebSearch, "web_search": events.ToolWebSearch,
		"todo_write": events.ToolTodoWrite, "save_memory": events.ToolTodoWrite, "exit_plan_mode": events.ToolExitPlanMode,
		"agent": events.ToolAgent, "task": events.ToolAgent, "dispatch_agent": events.ToolAgent, "task_stop": events.ToolTaskStop,
		"send_message": events.ToolSendMessage, "ask_user_question": events.ToolAskUserQuestion, "skill": events.ToolSkill,
		"lsp": events.ToolLsp, "cron_create": events.ToolCronCreate, "cron_list": events.ToolCronList, "cron_delete": events.ToolCronDelete,
	},
	// A permission request carries no tool name (it comes with the call's
	// completion, in _meta.toolName); an MCP call's options do: "Always
	// Allow in project: <tool>".
	PermissionToolName: func(opts []PermissionOption) string {
		for _, o := range opts {
			if name, ok := strings.CutPrefix(o.Name, "Always Allow in project: "); ok && !strings.ContainsAny(name, " *") {
				return name
			}
		}
		return ""
	},
	// It lists models as "<model>(<auth type>)", and the one configured
	// through OPENAI_MODEL as "$runtime|<auth type>|<model>(<auth type>)";
	// the adapter runs the openai auth type only, so the others (its own
	// coder-model over qwen-oauth) are left out.
	ModelEntry: qwenModel,
	// It retries a failed model call up to 7 times over about 75 s (not
	// configurable), saying so only in its debug log.
	RetryLog: func(home, sessionID string) string {
		return filepath.Join(home, ".qwen", "debug", sessionID+".txt")
	},
	Notes: "Resume: in the warm process, else session/load (it replays only the user's prompts to the client; the model gets the whole history).",
}

// qwenModel reads a Qwen Code model id: the model OPENAI_MODEL takes, when
// it is served over the openai auth type.
func qwenModel(reported string) (id, provider string, ok bool) {
	rest := strings.TrimPrefix(reported, "$runtime|")
	if rest != reported {
		auth, model, found := strings.Cut(rest, "|")
		if !found {
			return "", "", false
		}
		rest = model
		if !strings.HasSuffix(rest, "("+auth+")") {
			return "", "", false
		}
	}
	open := strings.LastIndex(rest, "(")
	if open <= 0 || !strings.HasSuffix(rest, ")") {
		return "", "", false
	}
	model, auth := rest[:open], rest[open+1:len(rest)-1]
	if auth != "openai" {
		return "", "", false
	}
	return model, "openai", true
}

// qwenProject is where Qwen Code keeps the chats of working directory
// workspace.
func qwenProject(home, workspace string) string {
	return filepath.Join(home, ".qwen", "projects", engine.PathSlug(workspace))
}

// relocateQwenChat points a saved chat at workspace: every record of
// chats/<session>.jsonl names the directory it was written in ("cwd"), and
// session/load of a chat made in another directory (on another worker)
// answers as if it were empty, so the follow-up turn would start over.
func relocateQwenChat(home, _, workspace, sessionID string) error {
	if !engine.PlainName(sessionID) {
		return nil
	}
	path := filepath.Join(qwenProject(home, workspace), "chats", sessionID+".jsonl")
	err := engine.EditJSONL(path, func(_ int, rec map[string]json.RawMessage) bool {
		return engine.SetString(rec, "cwd", workspace, false)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // not saved here: session/load says so
	}
	return err
}
