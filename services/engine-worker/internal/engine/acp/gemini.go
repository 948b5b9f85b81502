package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// Gemini is Gemini CLI (`gemini --acp --skip-trust`).
//
// Its home needs settings.json selecting API-key auth (else it fails with
// "Invalid auth method selected."); the model is fixed with -m, because
// its default ("auto") first asks a router model in JSON mode. Its tool
// calls carry no raw input and no name: the name is the id's prefix
// (run_shell_command__…) and a shell call's title is its command. Its
// launcher re-spawns itself and, with an MCP server attached, does not
// exit on stdin EOF: the process group is always killed.
var Gemini = Profile{
	Type: events.EngineGemini, Name: "Gemini CLI", Provider: "google",
	Args:           []string{"--acp", "--skip-trust"},
	ModelArgs:      func(model string) []string { return []string{"--model", model} },
	DefaultModel:   "gemini-3.8-flash",
	KeyEnv:         []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
	BaseURLEnv:     []string{"GOOGLE_GEMINI_BASE_URL"},
	Scheme:         modelproxy.Google,
	DefaultBaseURL: "https://generativelanguage.googleapis.com",
	Setup: func(in SetupInput) ([]string, error) {
		settings := map[string]any{
			"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
			"general": map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true,
				// Retries are the worker's call: a failed model call fails the turn.
				"maxAttempts": in.Retries + 1},
			// The pty shell reports its output as terminal cells, which
			// Gemini's ACP layer drops; the plain shell reports text.
			"tools": map[string]any{"shell": map[string]any{"enableInteractiveShell": false}},
		}
		if err := writeJSON(filepath.Join(in.Home, ".gemini", "settings.json"), settings); err != nil {
			return nil, err
		}
		env := []string{"GEMINI_API_KEY=" + in.Cred.APIKey, "GEMINI_CLI_NO_RELAUNCH=true"}
		if in.Cred.BaseURL != "" {
			env = append(env, "GOOGLE_GEMINI_BASE_URL="+strings.TrimRight(in.Cred.BaseURL, "/"))
		}
		return env, nil
	},
	// Gemini CLI keeps a working directory's chats in
	// ~/.gemini/tmp/<project slug>/chats: a session workspace is the
	// chat's own, so the whole directory is.
	SessionDirs: func(home, _, workspace, _ string) []engine.SessionDir {
		return []engine.SessionDir{{Name: "chats", Dir: filepath.Join(home, ".gemini", "tmp", geminiSlug(home, workspace), "chats")}}
	},
	BeforeReopen: keepGeminiChat,
	Tools: ToolNames{
		"run_shell_command": events.ToolBash, "read_file": events.ToolRead, "read_many_files": events.ToolRead,
		"write_file": events.ToolWrite, "replace": events.ToolEdit, "edit": events.ToolEdit, "list_directory": events.ToolList,
		"glob": events.ToolGlob, "search_file_content": events.ToolGrep, "grep_search": events.ToolGrep,
		"web_fetch": events.ToolWebFetch, "google_web_search": events.ToolWebSearch, "write_todos": events.ToolTodoWrite,
		"save_memory": events.ToolTodoWrite, "ask_user": events.ToolAskUserQuestion, "exit_plan_mode": events.ToolExitPlanMode,
		"enter_plan_mode": events.ToolEnterPlanMode,
	},
	// Ids look like run_shell_command__run_shell_command_1795976674064_0.
	RawToolName: func(id, _ string) string {
		name, _, ok := strings.Cut(id, "__")
		if !ok {
			return ""
		}
		return name
	},
	// Its write tool reads the file first and tells a new file from a
	// failure by an ENOENT code, which it looks for in the error's message;
	// but its ACP SDK rejects with the plain JSON-RPC error object, whose
	// message it never reads, so every error fails the write. A missing
	// file therefore reads as empty, and new files can be written.
	MissingFileEmpty: true,
	Notes:            "Resume: in the warm process, else session/load, after the saved chat is renamed out of the way of the recording the load starts.",
}

// keepGeminiChat renames the saved chat of sessionID out of the way of the
// new process: its session/load first starts a recording of the same
// session in session-<minute>-<id8>.jsonl, which, within the minute the
// chat was saved, is the saved chat's own file, emptied; the loader then
// finds nothing to resume. A renamed chat keeps the session- prefix the
// loader lists, and the new, empty recording is not resumable, so the
// loader picks the saved one.
func keepGeminiChat(home, _, _, sessionID string) error {
	if len(sessionID) < 8 {
		return nil
	}
	chats, err := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+sessionID[:8]+".json*"))
	if err != nil {
		return err
	}
	for _, f := range chats {
		dir, name := filepath.Split(f)
		if strings.HasPrefix(name, "session-kept-") {
			continue
		}
		if err := os.Rename(f, filepath.Join(dir, "session-kept-"+strings.TrimPrefix(name, "session-"))); err != nil {
			return err
		}
	}
	return nil
}

// geminiSlugChars is what Gemini CLI allows in a project slug.
var geminiSlugChars = regexp.MustCompile(`^[a-z0-9-]+$`)

// geminiSlug is the directory Gemini CLI keeps the working directory
// workspace's files in, below ~/.gemini/tmp: the one its registry
// (~/.gemini/projects.json) gives the directory, else the one it claims
// for a directory it has not seen, the slug of its last element (a chat's
// workspace is named after the chat, so the same on every worker). A
// restored chats directory has no owner marker yet, so Gemini claims that
// slug for this worker's workspace and finds the chats in it.
func geminiSlug(home, workspace string) string {
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := os.ReadFile(filepath.Join(home, ".gemini", "projects.json")); err == nil && json.Unmarshal(b, &reg) == nil {
		if slug := reg.Projects[filepath.Clean(workspace)]; geminiSlugChars.MatchString(slug) {
			return slug
		}
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(filepath.Base(workspace)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	if slug := strings.Trim(b.String(), "-"); slug != "" {
		return slug
	}
	return "project"
}
