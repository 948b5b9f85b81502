package acp

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// OpenCode is `opencode acp`. Its whole config travels in
// OPENCODE_CONFIG_CONTENT: a provider pointing at the account's
// OpenAI-compatible endpoint, the model for both the turn and its title
// request, and "ask" for every tool that has an effect, so each call comes
// to Clopen as a permission request. Its first tool_call title is the
// tool's name ("bash"); later titles describe the call.
var OpenCode = Profile{
	Type: events.EngineOpenCode, Name: "OpenCode", Provider: "opencode",
	Args:           []string{"acp"},
	DefaultModel:   "gpt-5.5",
	KeyEnv:         []string{"OPENCODE_API_KEY", "OPENAI_API_KEY"},
	BaseURLEnv:     []string{"OPENCODE_BASE_URL", "OPENAI_BASE_URL"},
	Scheme:         modelproxy.Bearer,
	DefaultBaseURL: "https://api.openai.com/v1",
	Setup: func(in SetupInput) ([]string, error) {
		cfg := map[string]any{
			"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
			"permission": map[string]any{"bash": "ask", "edit": "ask", "webfetch": "ask"},
		}
		model := in.Model
		provider, _, qualified := strings.Cut(model, "/")
		if in.Cred.BaseURL != "" && (!qualified || provider == "clopen") {
			id := strings.TrimPrefix(model, "clopen/")
			cfg["provider"] = map[string]any{"clopen": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "Clopen",
				"options": map[string]any{"baseURL": strings.TrimRight(in.Cred.BaseURL, "/"), "apiKey": in.Cred.APIKey},
				"models": map[string]any{id: map[string]any{"name": id, "tool_call": true,
					"limit": map[string]any{"context": 128000, "output": 8192}}},
			}}
			model = "clopen/" + id
		} else if !qualified {
			model = "openai/" + model
		}
		cfg["model"], cfg["small_model"] = model, model
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		env := []string{"OPENCODE_CONFIG_CONTENT=" + string(b), "OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1"}
		if dir := openCodeChatDir(in.Home, in.Chat); dir != "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			env = append(env, "OPENCODE_DB="+filepath.Join(dir, "opencode.db"))
		}
		if in.Cred.BaseURL == "" && in.Cred.APIKey != "" {
			env = append(env, "OPENAI_API_KEY="+in.Cred.APIKey)
		}
		return env, nil
	},
	// Its sessions live in one SQLite database, opencode.db under its data
	// dir, which every chat of the instance would share: each chat gets a
	// database of its own (OPENCODE_DB), and that database, with its
	// write-ahead log, is the chat's session state.
	SessionDirs:  chatDir("db", openCodeChatDir),
	BeforeReopen: relocateOpenCodeChat,
	Tools: ToolNames{
		"bash": events.ToolBash, "view": events.ToolRead, "read": events.ToolRead, "write": events.ToolWrite, "edit": events.ToolEdit,
		"patch": events.ToolPatch, "apply_patch": events.ToolPatch, "glob": events.ToolGlob, "grep": events.ToolGrep,
		"list": events.ToolList, "fetch": events.ToolWebFetch, "web_fetch": events.ToolWebFetch, "webfetch": events.ToolWebFetch,
		"web_search": events.ToolWebSearch, "websearch": events.ToolWebSearch, "todo_write": events.ToolTodoWrite,
		"todowrite": events.ToolTodoWrite, "todoread": events.ToolTodoWrite, "task": events.ToolAgent,
		"question": events.ToolAskUserQuestion, "skill": events.ToolSkill, "lsp": events.ToolLsp,
		"list_mcp_resources": events.ToolListMcpResources, "read_mcp_resource": events.ToolReadMcpResource,
	},
	RawToolName: func(_, title string) string { return title },
	// Its model option's values are "<provider>/<model>", which is what its
	// config's model takes: the id stays whole, the provider is its prefix.
	ModelEntry: func(reported string) (string, string, bool) {
		provider, model, ok := strings.Cut(reported, "/")
		return reported, provider, ok && provider != "" && model != ""
	},
	Unavailable: openCodeUnavailable,
	// It says nothing over ACP while it retries a failed model call (a
	// minute or more), but logs each failure, without its HTTP status.
	RetryLog: func(home, _ string) string {
		return filepath.Join(home, ".local", "share", "opencode", "log", "*.log")
	},
	RetryLine: openCodeFailedCall,
	Notes:     "Resume: in the warm process, else session/load (full replay, dropped). No fork over ACP.",
}

// openCodeChatDir is where chat's OpenCode database lives under home; ""
// for a turn of no chat (or an id that is not a plain name), which uses
// the instance's database.
func openCodeChatDir(home, chat string) string {
	if !engine.PlainName(chat) {
		return ""
	}
	return filepath.Join(home, ".local", "share", "opencode", "chats", chat)
}

// relocateOpenCodeChat points the sessions of chat's database at
// workspace. OpenCode runs a session in the directory its row names, not
// in the process's: a chat restored from another worker names that
// worker's workspace, which does not exist here, and its next prompt
// fails ("OpenCode service failure", service "session"). The database is
// the chat's alone, so every session in it moves; path, the directory
// relative to the project's worktree, moves with it where the worktree
// is the root.
func relocateOpenCodeChat(home, chat, workspace, _ string) error {
	dir := openCodeChatDir(home, chat)
	if dir == "" {
		return nil
	}
	db, err := openChatDB(home, dir, "opencode.db")
	if err != nil || db == nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`UPDATE session SET path = CASE WHEN path = ltrim(directory, '/') THEN ? ELSE path END, directory = ?
		WHERE directory <> ?`, strings.TrimPrefix(workspace, "/"), workspace, workspace)
	return err
}

// openCodeUnavailable: with a model endpoint configured, only the models
// Setup gives that endpoint (clopen/<model>, or a bare id) reach it; every
// other provider's model goes to that provider's own service (opencode/* to
// OpenCode Zen), which it cannot reach with the account in force.
func openCodeUnavailable(model, provider string, cred Credential) string {
	p, _, qualified := strings.Cut(model, "/")
	if cred.BaseURL == "" || !qualified || p == "clopen" {
		return ""
	}
	if p == "opencode" {
		return "served by OpenCode Zen, not by the configured model endpoint"
	}
	return "served by " + cmp.Or(provider, p) + "'s own API, not by the configured model endpoint"
}

// openCodeFailedCall reads a line of OpenCode's log: a failed model call
// of the session's own agent (its title calls, agent=title, are not the
// turn's) is `message="stream error"` with the provider's words in
// error.error; a status is taken only where a field names one.
func openCodeFailedCall(line, sessionID string) (int, string, bool) {
	if !strings.Contains(line, `message="stream error"`) {
		return 0, "", false
	}
	fields := logfmt(line)
	if fields["agent"] == "title" || (sessionID != "" && fields["session.id"] != "" && fields["session.id"] != sessionID) {
		return 0, "", false
	}
	status := 0
	for _, k := range []string{"error.statusCode", "statusCode", "status"} {
		if n, err := strconv.Atoi(fields[k]); err == nil && n >= 400 && n <= 599 {
			status = n
			break
		}
	}
	return status, fields["error.error"], true
}

// logfmt splits a `key=value key="quoted \"value\""` line; a malformed
// rest is dropped.
func logfmt(line string) map[string]string {
	out := map[string]string{}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		eq := strings.IndexByte(line, '=')
		sp := strings.IndexByte(line, ' ')
		if eq < 0 || (sp >= 0 && sp < eq) { // a bare word
			if sp < 0 {
				break
			}
			line = line[sp+1:]
			continue
		}
		key, rest := line[:eq], line[eq+1:]
		if strings.HasPrefix(rest, `"`) {
			v, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			if u, err := strconv.Unquote(v); err == nil {
				out[key] = u
			}
			line = rest[len(v):]
			continue
		}
		if sp = strings.IndexByte(rest, ' '); sp < 0 {
			out[key], line = rest, ""
		} else {
			out[key], line = rest[:sp], rest[sp+1:]
		}
	}
	return out
}
