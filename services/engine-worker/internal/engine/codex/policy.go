package codex

import (
	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// threadPolicy turns a run's permission policy into the thread config that
// withholds tools up front (codex runs some calls, read-only commands and
// web searches, without asking): a Bash the policy does not admit turns the
// shell tool off, WebSearch turns web search off, and an MCP server whose
// every tool is denied (mcp__<server>__*) is not connected. What codex
// cannot withhold (apply_patch, single MCP tools) is still refused by
// Permit when codex asks.
func threadPolicy(policy events.PermissionRules, servers []engine.MCPServer) (map[string]any, []engine.MCPServer) {
	cfg := map[string]any{}
	if !policy.Allows(string(events.ToolBash)) {
		cfg["features"] = map[string]any{"shell_tool": false}
	}
	if !policy.Allows(string(events.ToolWebSearch)) {
		cfg["web_search"] = "disabled"
	}
	kept := make([]engine.MCPServer, 0, len(servers))
	for _, s := range servers {
		if !policy.DeniesAll(events.MCPToolPrefix + s.Name + "__") {
			kept = append(kept, s)
		}
	}
	return cfg, kept
}

// withholdAll adds to a thread config the tools a denied policy leaves
// offered (image viewing, goals, questions), so that a structured
// generation's model is offered no function tool. apply_patch and
// tool_search stay: 0.171.0 has no setting that withholds them.
func withholdAll(cfg map[string]any) {
	features, _ := cfg["features"].(map[string]any)
	if features == nil {
		features = map[string]any{}
		cfg["features"] = features
	}
	features["view_image"], features["goals"] = false, false
	cfg["tools"] = map[string]any{"experimental_request_user_input": map[string]any{"enabled": false}}
}
