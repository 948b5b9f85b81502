package acp

import (
	"testing"

	"clopen.dev/pkg/events"
)

// TestBareMCPNames: a call named only by its bare tool name (Qwen, until
// the call completes) is given the server that can have it: the only one;
// Clopen's own server for one of its tools, the one external server for
// any other; with several external servers, the one whose tool list has
// it. When the lists cannot tell (no list, or two servers list it) the
// name stays unknown rather than a guess.
func TestBareMCPNames(t *testing.T) {
	lists := map[string][]string{"echo": {"b"}, "both": {"a", "b"}, "elsewhere": {"c"}}
	offering := func(tool string) []string { return lists[tool] }
	for _, tc := range []struct {
		raw      string
		servers  []string
		offering func(string) []string
		want     string
	}{
		{"echo", []string{"probe"}, nil, "mcp__probe__echo"},
		{"echo", []string{events.MCPInternalServer, "echoes"}, nil, "mcp__echoes__echo"},
		{"ask_user", []string{events.MCPInternalServer, "echoes"}, nil, "mcp__clopen__ask_user"},
		{"memory_search", []string{"echoes", events.MCPInternalServer}, nil, "mcp__clopen__memory_search"},
		{"ask_user", []string{events.MCPInternalServer}, nil, "mcp__clopen__ask_user"},
		{"echo", []string{events.MCPInternalServer, "a", "b"}, nil, "Unknown:echo"},
		{"echo", []string{"a", "b"}, nil, "Unknown:echo"},
		{"echo", []string{events.MCPInternalServer, "a", "b"}, offering, "mcp__b__echo"},
		{"both", []string{events.MCPInternalServer, "a", "b"}, offering, "Unknown:both"},
		{"elsewhere", []string{"a", "b"}, offering, "Unknown:elsewhere"},
		{"missing", []string{"a", "b"}, offering, "Unknown:missing"},
	} {
		c := &call{Kind: "other", MetaName: tc.raw}
		if got, _ := canonicalName(&Qwen, c, tc.servers, tc.offering); got != tc.want {
			t.Errorf("%s with servers %v: %s, want %s", tc.raw, tc.servers, got, tc.want)
		}
	}
}
