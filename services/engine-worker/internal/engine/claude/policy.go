package claude

import (
	"strings"

	"clopen.dev/pkg/events"
)

// builtinTools are the tools Claude Code 2.1.332 offers (its system/init
// list), by Claude's own names. An allow list is enforced by denying the
// ones it does not admit.
var builtinTools = []string{"Task", "AskUserQuestion", "Bash", "CronCreate", "CronDelete", "CronList", "Edit",
	"EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep", "ListAgents", "Monitor",
	"NotebookEdit", "Read", "ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "TaskStop", "ToolSearch",
	"WebFetch", "WebSearch", "Workflow", "Write"}

// disallowed turns a run's policy into Claude Code's --disallowedTools list.
// In its default permission mode the CLI runs read-only tools without asking
// (they never reach can_use_tool), so a deny must also be given up front:
// every built-in tool the policy does not admit, every exact name it denies,
// and every MCP server whose tools it denies as a whole (mcp__server__*).
// MCP tools under an allow list still ask, and Permit refuses them there.
// AskUserQuestion is never denied: it is how the agent talks to the user.
func disallowed(r events.PermissionRules) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, pat := range r.Deny {
		switch prefix, wild := strings.CutSuffix(pat, "*"); {
		case wild && strings.HasPrefix(prefix, events.MCPToolPrefix) && strings.HasSuffix(prefix, "__") && strings.Count(prefix, "__") == 2:
			add(strings.TrimSuffix(prefix, "__")) // mcp__server__* is every tool of mcp__server
		case !wild && !r.Allows(pat): // AskUserQuestion is always admitted
			add(claudeName(pat))
		}
	}
	for _, b := range builtinTools {
		if !r.Allows(ToolName(b)) {
			add(b)
		}
	}
	return out
}

// claudeName is a canonical tool name as Claude Code calls it.
func claudeName(canonical string) string {
	if canonical == string(events.ToolAgent) {
		return "Task"
	}
	return canonical
}
