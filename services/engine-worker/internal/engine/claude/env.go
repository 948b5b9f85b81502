package claude

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"clopen.dev/services/engine-worker/internal/engine"
)

// environ builds the CLI's whole environment. Nothing of the worker's own
// environment passes but PATH, LANG and TMPDIR: the worker's secrets never
// reach an agent wholesale. HOME and CLAUDE_CONFIG_DIR are d's, so
// sessions, settings and logins of different tenants and accounts never
// mix.
func environ(d dirs, c Credential, maxRetries int) []string {
	env := []string{
		"PATH=" + cmp.Or(os.Getenv("PATH"), engine.DefaultPath),
		"HOME=" + d.home,
		"CLAUDE_CONFIG_DIR=" + d.config,
		"LANG=" + cmp.Or(os.Getenv("LANG"), "C.UTF-8"),
		"TMPDIR=" + os.TempDir(),
		// Nothing but the model calls leaves the process.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_MAX_RETRIES=" + strconv.Itoa(max(maxRetries, 0)),
	}
	if os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1") // the CLI refuses some modes as root otherwise
	}
	if c.APIKey != "" {
		env = append(env, "ANTHROPIC_API_KEY="+c.APIKey)
	}
	if c.OAuthToken != "" {
		env = append(env, "CLAUDE_CODE_OAUTH_TOKEN="+c.OAuthToken)
	}
	if c.BaseURL != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+strings.TrimRight(c.BaseURL, "/"))
	}
	return env
}

// dirs are a process's HOME and CLAUDE_CONFIG_DIR.
type dirs struct{ home, config string }

// dirs are the instance's state dir as HOME and, as CLAUDE_CONFIG_DIR,
// configDir (the worker's config dir of the chat, where the artifacts
// render CLAUDE.md, skills, agents and settings, and where the chat's
// transcripts go) or else the .claude inside HOME.
func (e *Engine) dirs(configDir string) dirs {
	if configDir == "" {
		configDir = filepath.Join(e.home, ".claude")
	}
	return dirs{home: e.home, config: configDir}
}

// make creates both, 0700.
func (d dirs) make() error {
	for _, dir := range []string{d.home, d.config} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("claude state dir: %w", err)
		}
	}
	return nil
}

// state are the dirs a confined process may write: HOME, and
// CLAUDE_CONFIG_DIR when it is not inside.
func (d dirs) state() []string {
	if strings.HasPrefix(d.config, d.home+string(filepath.Separator)) {
		return []string{d.home}
	}
	return []string{d.home, d.config}
}
