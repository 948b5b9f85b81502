package claude

import (
	"slices"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

func TestCLIArgs(t *testing.T) {
	tests := []struct {
		name    string
		level   string
		servers []engine.MCPServer
		want    string // a run of arguments that must appear
		wantErr bool
	}{
		{name: "auto shows thinking, no effort", level: LevelAuto, want: "--model m --thinking-display summarized --strict-mcp-config"},
		{name: "off disables thinking", level: LevelOff, want: "--model m --thinking disabled --strict-mcp-config"},
		{name: "effort levels", level: LevelXHigh, want: "--thinking-display summarized --effort xhigh"},
		{name: "MCP servers over HTTP", level: LevelAuto, servers: []engine.MCPServer{{Name: "p", URL: "http://h/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}},
			want: `--mcp-config {"mcpServers":{"p":{"headers":{"Authorization":"Bearer x"},"type":"http","url":"http://h/mcp"}}} --strict-mcp-config`},
		{name: "an MCP server needs a URL", level: LevelAuto, servers: []engine.MCPServer{{Name: "p"}}, wantErr: true},
	}
	for _, tt := range tests {
		args, err := cliArgs("m", tt.level, tt.servers, events.PermissionRules{})
		if tt.wantErr != (err != nil) {
			t.Errorf("%s: cliArgs error = %v", tt.name, err)
			continue
		}
		if got := strings.Join(args, " "); !tt.wantErr && !strings.Contains(got, tt.want) {
			t.Errorf("%s: cliArgs = %s, want it to contain %s", tt.name, got, tt.want)
		}
		if !tt.wantErr && !slices.Contains(args, "--permission-prompt-tool") {
			t.Errorf("%s: permission prompts do not come to the host: %v", tt.name, args)
		}
	}
	a, _ := cliArgs("m", LevelAuto, nil, events.PermissionRules{})
	if specOf(a, "/w", Credential{APIKey: "k"}) == specOf(a, "/w", Credential{APIKey: "other"}) ||
		specOf(a, "/w", Credential{APIKey: "k"}) == specOf(a, "/v", Credential{APIKey: "k"}) {
		t.Error("specOf ignores the credentials or the workspace: a warm process could serve another account or project")
	}
}
