package pi

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"clopen.dev/services/engine-worker/internal/engine"
)

// keyEnv is the variable models.json names as the API key: the key itself
// never lands on disk.
const keyEnv = "CLOPEN_PI_API_KEY"

//go:embed extension/clopen.ts
var extensionSource []byte

// home is the on-disk state of one (tenant, account): HOME, pi's agent
// dir (PI_CODING_AGENT_DIR: models.json, AGENTS.md, skills), the sessions
// of each project, and Clopen's extension.
type home struct {
	dir      string
	agentDir string
}

// newHome lays out the state of an instance under root: root/<tenant>/<account>.
// configDir, when set, is the worker's isolated config dir for the instance
// (where the artifacts render AGENTS.md, skills and prompts for pi) and
// becomes the agent dir.
func newHome(root, tenant, account, configDir string) home {
	dir := engine.StateDir(root, tenant, account)
	h := home{dir: dir, agentDir: filepath.Join(dir, "agent")}
	if configDir != "" {
		h.agentDir = configDir
	}
	return h
}

// sessions is the sessions dir of a project: resuming finds sessions of
// the same project only.
func (h home) sessions(project string) string {
	return filepath.Join(h.dir, "sessions", engine.PathToken(project, "_"))
}

func (h home) extension() string { return filepath.Join(h.dir, "extension", "clopen.ts") }

// state are the dirs a confined pi may write: HOME (sessions, the
// extension and, unless a ConfigDir replaces it, the agent dir are inside)
// and the agent dir.
func (h home) state() []string {
	if strings.HasPrefix(h.agentDir, h.dir+string(filepath.Separator)) {
		return []string{h.dir}
	}
	return []string{h.dir, h.agentDir}
}

// prepare creates the dirs and writes models.json and the extension.
func (h home) prepare(cred Credential, model, project string) error {
	for _, d := range []string{h.dir, h.agentDir, h.sessions(project), filepath.Dir(h.extension())} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("pi state dir: %w", err)
		}
	}
	if err := h.writeModels(cred, model); err != nil {
		return err
	}
	if err := h.writeSettings(); err != nil {
		return err
	}
	return engine.WriteIfChanged(h.extension(), extensionSource)
}

// writeSettings turns off the retries of pi's provider SDKs in the agent
// dir's settings.json, keeping what else it holds: the Anthropic SDK would
// retry a failed model call twice and say so nowhere, while pi's own
// retries (set_auto_retry) come as auto_retry_start events with the status.
func (h home) writeSettings() error {
	path := filepath.Join(h.agentDir, "settings.json")
	settings := map[string]any{}
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &settings); err != nil {
			return fmt.Errorf("pi settings %s: %w", path, err)
		}
	} else if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("pi settings: %w", err)
	}
	retry, _ := settings["retry"].(map[string]any)
	if retry == nil {
		retry = map[string]any{}
	}
	provider, _ := retry["provider"].(map[string]any)
	if provider == nil {
		provider = map[string]any{}
	}
	provider["maxRetries"] = 0
	retry["provider"], settings["retry"] = provider, retry
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return fmt.Errorf("pi settings: %w", err)
	}
	return engine.WriteIfChanged(path, append(b, '\n'))
}

// writeModels writes the agent dir's models.json (see modelsJSON).
func (h home) writeModels(cred Credential, model string) error {
	if err := os.MkdirAll(h.agentDir, 0o700); err != nil {
		return fmt.Errorf("pi state dir: %w", err)
	}
	return engine.WriteIfChanged(filepath.Join(h.agentDir, "models.json"), modelsJSON(cred, model))
}

// modelsJSON points pi at the account's provider: the built-in Anthropic
// provider (catalog and prices kept) at the credential's base URL, or a
// Chat Completions provider of Clopen's own that serves model.
func modelsJSON(cred Credential, model string) []byte {
	p := map[string]any{"apiKey": keyEnv}
	if cred.BaseURL != "" {
		p["baseUrl"] = strings.TrimRight(cred.BaseURL, "/")
	}
	if cred.API == APIOpenAICompletions {
		p["api"] = APIOpenAICompletions
		if cred.BaseURL == "" {
			p["baseUrl"] = openAIBaseURL
		}
		p["models"] = []any{map[string]any{"id": model, "reasoning": true}}
	}
	b, _ := json.MarshalIndent(map[string]any{"providers": map[string]any{cred.provider(): p}}, "", "  ")
	return append(b, '\n')
}

// environ is pi's whole environment. Nothing of the worker's own
// environment passes but PATH, LANG and TMPDIR.
func (h home) environ(cred Credential) []string {
	return []string{
		"PATH=" + cmp.Or(os.Getenv("PATH"), engine.DefaultPath),
		"HOME=" + h.dir,
		"PI_CODING_AGENT_DIR=" + h.agentDir,
		"PI_OFFLINE=1", // no version checks, no package fetches
		"LANG=" + cmp.Or(os.Getenv("LANG"), "C.UTF-8"),
		"TMPDIR=" + os.TempDir(),
		"NO_COLOR=1",
		keyEnv + "=" + cred.APIKey,
	}
}

// findSession returns the file of session id in dir: pi names them
// <timestamp>_<id>.jsonl.
func findSession(dir, id string) (string, bool) {
	if id == "" || strings.ContainsAny(id, `/\*?[`) {
		return "", false
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*_"+id+".jsonl"))
	if len(matches) == 0 {
		return "", false
	}
	return matches[len(matches)-1], true
}

// relocate points the session file at path to workspace: pi's header (the
// file's first line, {"type":"session",…,"cwd"}) names the directory the
// session was made in, and pi refuses to switch to a session whose
// directory does not exist — as when the chat's snapshot was taken on
// another worker, whose workspaces are elsewhere. The rest of the file is
// left as it is.
func relocate(path, workspace string) error {
	err := engine.EditJSONL(path, func(i int, rec map[string]json.RawMessage) bool {
		// Only a header pi wrote: pi says what is wrong with anything else.
		return i == 0 && string(rec["type"]) == `"session"` && engine.SetString(rec, "cwd", workspace, true)
	})
	if err != nil {
		return fmt.Errorf("pi session: %w", err)
	}
	return nil
}
