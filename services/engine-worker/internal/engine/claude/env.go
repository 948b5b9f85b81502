package claude

import (
	"cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"clopen.dev/services/engine-worker/internal/engine"
)

// environ builds the CLI's whole environment. Nothing of the worker's own
// environment passes but PATH, LANG and TMPDIR: the worker's secrets never
// reach an agent wholesale. HOME and CLAUDE_CONFIG_DIR point at the
// instance's own state dir, so sessions, settings and logins of different
// tenants and accounts never mix.
func environ(home string, c Credential, maxRetries int) []string {
	env := []string{
		"PATH=" + cmp.Or(os.Getenv("PATH"), engine.DefaultPath),
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
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
