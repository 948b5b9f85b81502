package acp

import (
	"clopen.dev/services/engine-worker/internal/modelproxy"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Profile is everything the client knows about one ACP agent: how to start
// it, how to give it credentials and a hermetic home, how to read its tool
// calls, and its quirks. The table is Profiles; Custom builds the row of an
// operator's own agent.
type Profile struct {
	// Type is the engine type messages carry.
	Type events.EngineType
	// SessionDirs names where the agent keeps the session of chat (Clopen's
	// chat session id), which works in workspace, under the instance's
	// home (engine.Sessions); session is the one its turn ended on (""
	// when restoring). Nil: the agent's sessions do not follow a chat to
	// another worker.
	SessionDirs func(home, chat, workspace, session string) []engine.SessionDir
	// Name is the agent's name for messages to people.
	Name string
	// Provider is the provider id messages carry.
	Provider string
	// Args follow the executable (the model's flag, if any, comes from
	// ModelArgs).
	Args []string
	// ModelArgs returns flags that pick model, for agents that take it on
	// the command line; nil when the model goes through Setup's env.
	ModelArgs func(model string) []string
	// DefaultModel is the model of a turn that names none.
	DefaultModel string
	// ModelEntry turns a model id the agent reports (session/new) into the
	// catalog's id, the model a turn is given, and its provider; ok is false
	// for a model the adapter cannot run. nil keeps the id and gives the
	// profile's Provider.
	ModelEntry func(reported string) (id, provider string, ok bool)
	// Unavailable says why model (of provider) cannot run with cred, ""
	// when it can: the catalog marks it so and a turn on it fails at once.
	// nil when every model the agent lists can run.
	Unavailable func(model, provider string, cred Credential) string
	// RunsOnlyListed: the agent runs only the models session/new lists and
	// silently runs its current one in place of any other (Cline), so a
	// turn asking for an unlisted model is told which one it got.
	RunsOnlyListed bool
	// KeyEnv are the worker's variables holding the agent's API key, in
	// order of preference; BaseURLEnv those holding the provider's address.
	KeyEnv, BaseURLEnv []string
	// PlaceholderKey is the key given when only a base URL is configured.
	PlaceholderKey string
	// Scheme is how the agent's provider takes its key, and DefaultBaseURL
	// where the provider is when the credential names no base URL: what a
	// confined agent's model proxy needs (see engine.Sandboxing.Route). An
	// empty Scheme, or an empty DefaultBaseURL with no base URL given, is a
	// login the proxy cannot carry.
	Scheme         modelproxy.Scheme
	DefaultBaseURL string
	// Setup writes the agent's settings under home and returns the
	// variables that configure it (credentials, model, hermetic switches).
	Setup func(in SetupInput) ([]string, error)
	// Tools maps the agent's raw tool names to canonical ones.
	Tools ToolNames
	// RawToolName reads a call's raw tool name from its id and the first
	// title it had, for agents that do not put it in _meta; nil if none.
	RawToolName func(id, firstTitle string) string
	// PermissionToolName reads a call's raw tool name from the options of
	// its permission request, for agents whose request carries it nowhere
	// else; nil if none.
	PermissionToolName func(opts []PermissionOption) string
	// Notice recognises the agent's own status lines sent as a whole
	// agent_message_chunk outside any text block (Copilot: "Info: …
	// Retrying...", "Error: Failed to get response …"): they become
	// notifications, and an error one fails the turn. nil if none.
	Notice func(chunk string) (level events.NotificationLevel, msg string, ok bool)
	// RetryLog is where in home the agent logs the failed model calls it
	// retries with their HTTP status, which it says nowhere over ACP (Qwen
	// Code's debug log, Copilot's process log): a glob, of which the newest
	// file is read with engine.RetryStatus while a turn runs. nil if none.
	RetryLog func(home, sessionID string) string
	// SilentRetries marks an agent that retries failed model calls and
	// says so nowhere (no ACP notice, no log): the worker then reports the
	// failures its model proxy sees (engine.SilentRetrier).
	SilentRetries bool
	// RetryLine, when set, reads a line of RetryLog instead of
	// engine.RetryStatus: whether it is a failed model call of sessionID,
	// with its HTTP status (0 when the agent does not log it) and the
	// provider's words.
	RetryLine func(line, sessionID string) (status int, detail string, ok bool)
	// BeforeReopen runs before session/fork, session/resume or
	// session/load reopens sessionID of chat in a process that does not
	// have it open, working in workspace, on the agent's files under home
	// (which may have been made on another worker, in another workspace);
	// nil if nothing is needed.
	BeforeReopen func(home, chat, workspace, sessionID string) error
	// MCPConfig, when set, gives the agent the turn's MCP servers through
	// its own settings (written under home) instead of session/new, for
	// agents that take only stdio servers over ACP (Cline). It returns the
	// variables that point the agent at them.
	MCPConfig func(home string, servers []engine.MCPServer) ([]string, error)
	// SessionUsage reads a session's running token usage and cost from the
	// agent's own files, for agents that report none over ACP (Cline).
	SessionUsage func(home, chat, sessionID string) (events.TokenUsage, float64, error)
	// PrimeCache, when set, are the arguments of a command that fills the
	// shared cache dir (XDG_CACHE_HOME) with what the agent unpacks there
	// on its first run (Copilot's 235 MB package). A confined agent may
	// only read that dir, so the worker runs the command itself, once per
	// cache dir, before it starts the agent confined.
	PrimeCache []string
	// MissingFileEmpty answers fs/read_text_file of a file that does not
	// exist (inside the workspace) with empty content instead of an error.
	MissingFileEmpty bool
	// Drop lists raw tool names of harness-only tools, left out of the
	// transcript on both the tool_use and the tool_result side.
	Drop map[string]bool
	// SingleTurn is true for agents that must not take a second prompt in
	// one process (none so far): every turn then starts its own.
	SingleTurn bool
	// Untested marks a profile built from the protocol alone, never run
	// against its agent (Cursor's agent cannot be installed here).
	Untested bool
	// Notes say, for people, what the agent cannot do and what the adapter
	// does instead; docs/ENGINES.md carries the same.
	Notes string
}

// SetupInput is what Profile.Setup works with.
type SetupInput struct {
	Home      string     // the instance's HOME, created
	Cred      Credential // the account's credentials
	Model     string     // the turn's model, never empty
	CacheDir  string     // a cache shared by every instance (Copilot's unpack)
	Workspace string
	Chat      string // Clopen's chat session id; "" for none
	Retries   int    // how often the agent may retry a failed model call
}

// Profiles are the agents Clopen knows, by engine type.
var Profiles = map[events.EngineType]*Profile{
	events.EngineGemini:   &Gemini,
	events.EngineQwen:     &Qwen,
	events.EngineCopilot:  &Copilot,
	events.EngineOpenCode: &OpenCode,
	events.EngineCline:    &Cline,
	events.EngineCursor:   &Cursor,
}

// CustomConfig is an operator's own ACP agent (engine type acp): the
// command that speaks ACP on stdio, its arguments and extra environment.
type CustomConfig struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	// Model is passed to no flag: the agent picks its own unless the
	// session offers a model option (best effort, see Engine).
	Model string `json:"model"`
}

// CustomFromEnv reads an operator's agent from CLOPEN_ACP_CONFIG (JSON
// CustomConfig) or, failing that, CLOPEN_ACP_COMMAND (the command and its
// arguments, split on spaces). ok is false when neither is set.
func CustomFromEnv(getenv func(string) string) (cfg CustomConfig, ok bool, err error) {
	if raw := strings.TrimSpace(getenv("CLOPEN_ACP_CONFIG")); raw != "" {
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return CustomConfig{}, false, fmt.Errorf("CLOPEN_ACP_CONFIG: %w", err)
		}
		if cfg.Command == "" {
			return CustomConfig{}, false, fmt.Errorf("CLOPEN_ACP_CONFIG: command is required")
		}
		return cfg, true, nil
	}
	f := strings.Fields(getenv("CLOPEN_ACP_COMMAND"))
	if len(f) == 0 {
		return CustomConfig{}, false, nil
	}
	return CustomConfig{Command: f[0], Args: f[1:]}, true, nil
}

// Custom is the profile of an operator's agent: no settings of its own,
// kind-based tool names, and the configured environment.
func Custom(cfg CustomConfig) *Profile {
	env := make([]string, 0, len(cfg.Env))
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	return &Profile{
		Type: events.EngineACP, Name: "ACP agent (" + filepath.Base(cfg.Command) + ")", Provider: "acp",
		Args: cfg.Args, DefaultModel: cfg.Model, Tools: ToolNames{},
		Setup: func(SetupInput) ([]string, error) { return env, nil },
		Notes: "An operator-configured agent: resume and fork as it advertises; tool names by ACP kind.",
	}
}

// writeJSON writes v as path's JSON unless the file already holds exactly
// that, creating parent dirs.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
