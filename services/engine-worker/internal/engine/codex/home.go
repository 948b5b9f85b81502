package codex

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"clopen.dev/services/engine-worker/internal/engine"
)

// keyEnv is the variable the custom provider reads its API key from: the
// key itself never lands in config.toml.
const keyEnv = "CLOPEN_CODEX_API_KEY"

// home is the on-disk state of one (tenant, account): HOME, CODEX_HOME
// (config.toml, sessions, sqlite state) and a TMPDIR that does not contain
// CODEX_HOME (codex refuses to put its helper binaries under TMPDIR).
type home struct {
	dir       string // HOME
	codexHome string // CODEX_HOME
	tmp       string // TMPDIR
}

// newHome lays out the state of an instance under root: root/<tenant>/<account>.
// configDir, when set, is the worker's isolated config dir for the
// instance (where the artifacts render AGENTS.md and prompts/), and becomes
// CODEX_HOME.
func newHome(root, tenant, account, configDir string) home {
	dir := engine.StateDir(root, tenant, account)
	h := home{dir: dir, codexHome: filepath.Join(dir, "codex-home"), tmp: filepath.Join(dir, "tmp")}
	if configDir != "" {
		h.codexHome = configDir
	}
	return h
}

// state are the dirs a confined app-server may write: HOME (TMPDIR and,
// unless a ConfigDir replaces it, CODEX_HOME are inside) and CODEX_HOME.
func (h home) state() []string {
	if strings.HasPrefix(h.codexHome, h.dir+string(filepath.Separator)) {
		return []string{h.dir}
	}
	return []string{h.dir, h.codexHome}
}

// prepare creates the dirs and writes config.toml.
func (h home) prepare(cred Credential, maxRetries int) error {
	for _, d := range []string{h.dir, h.codexHome, h.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("codex state dir: %w", err)
		}
	}
	return engine.WriteIfChanged(filepath.Join(h.codexHome, "config.toml"), configTOML(cred, maxRetries))
}

// configTOML is the hermetic configuration of every app-server: a custom
// provider speaking the Responses API over plain HTTP SSE, no analytics
// (whose export makes exits wait), no plugin fetches, questions
// (request_user_input) outside plan mode, and no under-development
// warning for that. Approval policy and sandbox are set per thread.
func configTOML(cred Credential, maxRetries int) []byte {
	retries := strconv.Itoa(max(maxRetries, 0))
	var b bytes.Buffer
	b.WriteString("# Written by Clopen before every app-server start; edits are overwritten.\n")
	b.WriteString(`model_provider = "clopen"` + "\n")
	b.WriteString(`approval_policy = "on-request"` + "\n")
	b.WriteString(`sandbox_mode = "workspace-write"` + "\n")
	b.WriteString("check_for_update_on_startup = false\n")
	b.WriteString("suppress_unstable_features_warning = true\n\n")
	b.WriteString("[model_providers.clopen]\n")
	b.WriteString(`name = "Clopen"` + "\n")
	b.WriteString("base_url = " + tomlString(strings.TrimRight(cmp.Or(cred.BaseURL, DefaultBaseURL), "/")) + "\n")
	b.WriteString("env_key = " + tomlString(keyEnv) + "\n")
	b.WriteString(`wire_api = "responses"` + "\n")
	b.WriteString("request_max_retries = " + retries + "\n")
	b.WriteString("stream_max_retries = " + retries + "\n\n")
	b.WriteString("[analytics]\nenabled = false\n\n")
	b.WriteString("[features]\nplugins = false\ndefault_mode_request_user_input = true\n")
	return b.Bytes()
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// environ is the app-server's whole environment. Nothing of the worker's
// own environment passes but PATH and LANG: its secrets never reach an
// agent wholesale.
func (h home) environ(cred Credential) []string {
	return []string{
		"PATH=" + cmp.Or(os.Getenv("PATH"), engine.DefaultPath),
		"HOME=" + h.dir,
		"CODEX_HOME=" + h.codexHome,
		"TMPDIR=" + h.tmp,
		"LANG=" + cmp.Or(os.Getenv("LANG"), "C.UTF-8"),
		"NO_COLOR=1",
		keyEnv + "=" + cred.APIKey,
	}
}
