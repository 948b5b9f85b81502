package claude

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// cliArgs is the command line of a turn, without the session it resumes.
func cliArgs(model, level string, servers []engine.MCPServer, policy events.PermissionRules) ([]string, error) {
	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--include-partial-messages", "--permission-prompt-tool", "stdio", "--model", model}
	args = append(args, reasoningArgs(level)...)
	if deny := disallowed(policy); len(deny) > 0 {
		args = append(args, "--disallowedTools", strings.Join(deny, ","))
	}
	if len(servers) > 0 {
		cfg := map[string]any{}
		for _, s := range servers {
			if s.Name == "" || s.URL == "" {
				return nil, fmt.Errorf("MCP server %q: name and URL are required", s.Name)
			}
			srv := map[string]any{"type": "http", "url": s.URL}
			if len(s.Headers) > 0 {
				srv["headers"] = s.Headers
			}
			cfg[s.Name] = srv
		}
		b, err := json.Marshal(map[string]any{"mcpServers": cfg})
		if err != nil {
			return nil, err
		}
		args = append(args, "--mcp-config", string(b))
	}
	// Only Clopen's MCP servers: never a workspace's .mcp.json.
	return append(args, "--strict-mcp-config"), nil
}

// specOf fingerprints everything a warm process was started with except
// the session it resumes.
func specOf(args []string, dir string, c Credential) string {
	h := sha256.New()
	for _, a := range append(args, dir, c.fingerprint()) {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
