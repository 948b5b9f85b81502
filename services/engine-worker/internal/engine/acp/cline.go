package acp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// Cline is `cline --acp`. session/new needs CLINE_API_KEY, CLINE_PROVIDER
// and CLINE_MODEL (else "Authentication required"); the base URL comes
// from providers.json in its home. CLINE_SESSION_BACKEND_MODE=local keeps
// it from starting its detached hub daemon, which would outlive the
// process group. Tool titles read "<tool>: <what>".
var Cline = Profile{
	Type: events.EngineCline, Name: "Cline", Provider: "openai-compatible",
	Args:         []string{"--acp"},
	DefaultModel: "gpt-5.5",
	// CLINE_MODEL must be in the provider's list (for openai-compatible:
	// gpt-4o only); any other runs gpt-4o without a word.
	RunsOnlyListed: true,
	// Cline 3.0.65 retries a failed call five times over about 77 s and
	// writes nothing about it until the last one fails (docs/ENGINES.md).
	SilentRetries:  true,
	KeyEnv:         []string{"CLINE_API_KEY", "OPENAI_API_KEY"},
	BaseURLEnv:     []string{"CLINE_BASE_URL", "OPENAI_BASE_URL"},
	Scheme:         modelproxy.Bearer,
	DefaultBaseURL: "https://api.openai.com/v1",
	Setup: func(in SetupInput) ([]string, error) {
		provider := "openai-compatible"
		settings := map[string]any{"provider": provider, "apiKey": in.Cred.APIKey, "model": in.Model}
		if in.Cred.BaseURL != "" {
			settings["baseUrl"] = strings.TrimRight(in.Cred.BaseURL, "/")
		}
		providers := map[string]any{"version": 1, "lastUsedProvider": provider, "modes": map[string]any{},
			// Without updatedAt Cline takes the prompt and never calls the model.
			"providers": map[string]any{provider: map[string]any{"settings": settings, "tokenSource": "manual",
				"updatedAt": "2026-01-01T00:00:00.000Z"}}}
		if err := writeJSON(filepath.Join(in.Home, ".cline", "data", "settings", "providers.json"), providers); err != nil {
			return nil, err
		}
		env := []string{"CLINE_API_KEY=" + in.Cred.APIKey, "CLINE_PROVIDER=" + provider, "CLINE_MODEL=" + in.Model,
			"CLINE_SESSION_BACKEND_MODE=local", "CLINE_NO_AUTO_UPDATE=1", "CLINE_NO_INTERACTIVE=1"}
		if dir := clineChatDir(in.Home, in.Chat); dir != "" {
			env = append(env, "CLINE_SESSION_DATA_DIR="+filepath.Join(dir, "sessions"), "CLINE_DB_DATA_DIR="+filepath.Join(dir, "db"))
		}
		return env, nil
	},
	// Its sessions are files under sessions/ indexed in a SQLite database
	// (db/sessions.db), both shared by every chat of the instance: each
	// chat gets its own (CLINE_SESSION_DATA_DIR, CLINE_DB_DATA_DIR), and
	// they are the chat's session state.
	SessionDirs:  chatDir("chat", clineChatDir),
	BeforeReopen: relocateClineChat,
	MCPConfig: func(home string, servers []engine.MCPServer) ([]string, error) {
		cfg := map[string]any{}
		for _, srv := range servers {
			entry := map[string]any{"type": "streamableHttp", "url": srv.URL}
			if len(srv.Headers) > 0 {
				entry["headers"] = srv.Headers
			}
			cfg[srv.Name] = entry
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		path := filepath.Join(home, ".cline", "data", "settings", "mcp-"+hex.EncodeToString(sum[:6])+".json")
		if err := writeJSON(path, map[string]any{"mcpServers": cfg}); err != nil {
			return nil, err
		}
		return []string{"CLINE_MCP_SETTINGS_PATH=" + path}, nil
	},
	// Usage is not reported over ACP; Cline keeps the session's running
	// total in its session file.
	SessionUsage: func(home, chat, sessionID string) (events.TokenUsage, float64, error) {
		if !engine.PlainName(sessionID) {
			return events.TokenUsage{}, 0, fmt.Errorf("session id %q is not a file name", sessionID)
		}
		data, err := os.ReadFile(filepath.Join(clineSessions(home, chat), sessionID, sessionID+".json"))
		if err != nil {
			return events.TokenUsage{}, 0, err
		}
		var f struct {
			Metadata struct {
				AggregateUsage struct {
					InputTokens      int64   `json:"inputTokens"`
					OutputTokens     int64   `json:"outputTokens"`
					CacheReadTokens  int64   `json:"cacheReadTokens"`
					CacheWriteTokens int64   `json:"cacheWriteTokens"`
					TotalCost        float64 `json:"totalCost"`
				} `json:"aggregateUsage"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			return events.TokenUsage{}, 0, err
		}
		u := f.Metadata.AggregateUsage
		return events.TokenUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadInputTokens: u.CacheReadTokens, CacheCreationInputTokens: u.CacheWriteTokens}, u.TotalCost, nil
	},
	Tools: ToolNames{
		"read_files": events.ToolRead, "editor": events.ToolEdit, "run_commands": events.ToolBash,
		"search_codebase": events.ToolGrep, "fetch_web_content": events.ToolWebFetch, "apply_patch": events.ToolPatch,
		"skills": events.ToolSkill, "ask_question": events.ToolAskUserQuestion,
	},
	// Titles look like "run_commands: echo …".
	RawToolName: func(_, title string) string {
		name, _, ok := strings.Cut(title, ":")
		if !ok || strings.ContainsAny(name, " \t") {
			return ""
		}
		return name
	},
	Notes: "Resume: in the warm process, else session/load when advertised.",
}

// clineChatDir is where chat's Cline sessions and their database live
// under home; "" for a turn of no chat (or an id that is not a plain
// name), which uses the instance's.
func clineChatDir(home, chat string) string {
	if !engine.PlainName(chat) {
		return ""
	}
	return filepath.Join(home, ".cline", "data", "chats", chat)
}

// clineSessions is the directory of chat's Cline session files.
func clineSessions(home, chat string) string {
	if dir := clineChatDir(home, chat); dir != "" {
		return filepath.Join(dir, "sessions")
	}
	return filepath.Join(home, ".cline", "data", "sessions")
}

// relocateClineChat points chat's saved Cline sessions at workspace and at
// this worker's files: each session's file and its database row name the
// directory it ran in (cwd, workspace_root) and where its messages are
// (messages_path, under the home of the worker that wrote it).
func relocateClineChat(home, chat, workspace, _ string) error {
	dir := clineChatDir(home, chat)
	if dir == "" {
		return nil
	}
	sessions := filepath.Join(dir, "sessions")
	entries, err := os.ReadDir(sessions)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	db, err := openChatDB(home, filepath.Join(dir, "db"), "sessions.db")
	if err != nil {
		return err
	}
	if db != nil {
		defer db.Close()
	}
	for _, ent := range entries {
		id := ent.Name()
		if !ent.IsDir() || !engine.PlainName(id) {
			continue
		}
		messages := filepath.Join(sessions, id, id+".messages.json")
		err := engine.EditJSON(filepath.Join(sessions, id, id+".json"), func(rec map[string]json.RawMessage) bool {
			a := engine.SetString(rec, "cwd", workspace, false)
			b := engine.SetString(rec, "workspace_root", workspace, false)
			c := engine.SetString(rec, "messages_path", messages, false)
			return a || b || c
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if db == nil {
			continue
		}
		if _, err := db.Exec(`UPDATE sessions SET cwd = ?, workspace_root = ?, messages_path = ? WHERE session_id = ?`,
			workspace, workspace, messages, id); err != nil {
			return err
		}
	}
	return nil
}
