package events

import "strings"

// Allows reports whether the rules admit a call of tool, a canonical tool
// name: a deny that matches refuses it; otherwise an empty allow list admits
// it and a non-empty one must match. AskUserQuestion is always admitted: it
// is how the agent talks to the user.
//
// This is the one place the decision is made: artifacts, the worker and
// every engine adapter ask it.
func (r PermissionRules) Allows(tool string) bool {
	if tool == string(ToolAskUserQuestion) {
		return true
	}
	if matchesAny(r.Deny, tool) {
		return false
	}
	return len(r.Allow) == 0 || matchesAny(r.Allow, tool)
}

// DeniesAll reports whether a deny pattern refuses every tool whose name
// starts with prefix ("mcp__github__" for all of one MCP server's tools):
// a pattern ending in * that matches prefix itself.
func (r PermissionRules) DeniesAll(prefix string) bool {
	for _, p := range r.Deny {
		if strings.HasSuffix(p, "*") && MatchTool(p, prefix) {
			return true
		}
	}
	return false
}

// MatchTool reports whether pattern, an exact tool name or a prefix ending
// in one *, matches tool.
func MatchTool(pattern, tool string) bool {
	if prefix, wild := strings.CutSuffix(pattern, "*"); wild {
		return strings.HasPrefix(tool, prefix)
	}
	return pattern == tool
}

func matchesAny(patterns []string, tool string) bool {
	for _, p := range patterns {
		if MatchTool(p, tool) {
			return true
		}
	}
	return false
}
