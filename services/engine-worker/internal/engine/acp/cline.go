package acp

import (
	"clopen.dev/services/engine-worker/internal/modelproxy"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
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
		return []string{"CLINE_API_KEY=" + in.Cred.APIKey, "CLINE_PROVIDER=" + provider, "CLINE_MODEL=" + in.Model,
			"CLINE_SESSION_BACKEND_MODE=local", "CLINE_NO_AUTO_UPDATE=1", "CLINE_NO_INTERACTIVE=1"}, nil
	},
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
	SessionUsage: func(home, sessionID string) (events.TokenUsage, float64, error) {
		data, err := os.ReadFile(filepath.Join(home, ".cline", "data", "sessions", sessionID, sessionID+".json"))
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
