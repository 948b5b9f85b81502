package pi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// mcpFiles writes the MCP servers of a process for Clopen's extension
// (0600: their headers may hold tokens) and names a fresh file for the
// extension's report of how each fared. Both are "" without servers.
func (h home) mcpFiles(servers []engine.MCPServer) (list, status string, err error) {
	if len(servers) == 0 {
		return "", "", nil
	}
	dir := filepath.Join(h.dir, "mcp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	data := mcpJSON(servers)
	sum := sha256.Sum256(data)
	list = filepath.Join(dir, hex.EncodeToString(sum[:8])+".json")
	if err := engine.WriteIfChanged(list, data); err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp(dir, "status-*.json")
	if err != nil {
		return "", "", err
	}
	f.Close()
	return list, f.Name(), nil
}

// mcpFingerprint identifies a set of MCP servers, so a warm process is
// reused only with the servers it connected.
func mcpFingerprint(servers []engine.MCPServer) string {
	if len(servers) == 0 {
		return ""
	}
	sum := sha256.Sum256(mcpJSON(servers))
	return hex.EncodeToString(sum[:8])
}

// mcpJSON is the servers as the extension reads them.
func mcpJSON(servers []engine.MCPServer) []byte {
	type server struct {
		Name    string            `json:"name"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
	}
	out := make([]server, 0, len(servers))
	for _, s := range servers {
		out = append(out, server{Name: s.Name, URL: s.URL, Headers: s.Headers})
	}
	return mustJSON(out)
}

// mcpStatus reads how the extension fared with each MCP server (it writes
// the report before pi answers its first command); a server it did not
// report failed.
func mcpStatus(servers []engine.MCPServer, report string) []events.MCPServer {
	var got map[string]string
	if report != "" {
		if data, err := os.ReadFile(report); err == nil {
			_ = json.Unmarshal(data, &got)
		}
	}
	out := make([]events.MCPServer, 0, len(servers))
	for _, s := range servers {
		st := events.MCPFailed
		if got[s.Name] == "connected" {
			st = events.MCPConnected
		}
		out = append(out, events.MCPServer{Name: s.Name, Status: st})
	}
	return out
}
