package codex

import (
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// threadPolicy turns a run's permission policy into the thread config that
// withholds tools up front (codex runs some calls, read-only commands and
// web searches, without asking): a denied (or not admitted) Bash turns the
// shell tool off, WebSearch turns web search off, and an MCP server whose
// every tool is denied (mcp__<server>__*) is not connected. What codex
// cannot withhold (apply_patch, single MCP tools) is still refused by
// Permit when codex asks. AskUserQuestion is never withheld.
func threadPolicy(allowed, denied []string, servers []engine.MCPServer) (map[string]any, []engine.MCPServer) {
	withheld := func(tool string) bool {
		return matches(tool, denied) || len(allowed) > 0 && !matches(tool, allowed)
	}
	cfg := map[string]any{}
	if withheld(string(events.ToolBash)) {
		cfg["features"] = map[string]any{"shell_tool": false}
	}
	if withheld(string(events.ToolWebSearch)) {
		cfg["web_search"] = "disabled"
	}
	kept := make([]engine.MCPServer, 0, len(servers))
	for _, s := range servers {
		if !matches(events.MCPToolPrefix+s.Name+"__*", denied) {
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

// matches reports whether tool is one of patterns: an exact name, or a
// prefix ending in *. A pattern "mcp__s__*" given as tool matches patterns
// that cover it ("mcp__s__*", "mcp__*", "*").
func matches(tool string, patterns []string) bool {
	for _, pat := range patterns {
		if pat == tool {
			return true
		}
		if prefix, wild := strings.CutSuffix(pat, "*"); wild && strings.HasPrefix(strings.TrimSuffix(tool, "*"), prefix) {
			return true
		}
	}
	return false
}
