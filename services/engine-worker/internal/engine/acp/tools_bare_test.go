package acp

import (
	"testing"

	"clopen.dev/pkg/events"
)

// TestBareMCPNames: a call named only by its bare tool name (Qwen, until
// the call completes) is given the server that can have it: the only one;
// Clopen's own server for one of its tools, the one external server for
// any other; with several external servers the name stays unknown rather
// than a guess.
func TestBareMCPNames(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		servers []string
		want    string
	}{
		{"echo", []string{"probe"}, "mcp__probe__echo"},
		{"echo", []string{events.MCPInternalServer, "echoes"}, "mcp__echoes__echo"},
		{"ask_user", []string{events.MCPInternalServer, "echoes"}, "mcp__clopen__ask_user"},
		{"memory_search", []string{"echoes", events.MCPInternalServer}, "mcp__clopen__memory_search"},
		{"ask_user", []string{events.MCPInternalServer}, "mcp__clopen__ask_user"},
		{"echo", []string{events.MCPInternalServer, "a", "b"}, "Unknown:echo"},
		{"echo", []string{"a", "b"}, "Unknown:echo"},
	} {
		c := &call{Kind: "other", MetaName: tc.raw}
		if got, _ := canonicalName(&Qwen, c, tc.servers); got != tc.want {
			t.Errorf("%s with servers %v: %s, want %s", tc.raw, tc.servers, got, tc.want)
		}
	}
}
