package acp

import "clopen.dev/pkg/events"

// Cursor is Cursor's agent CLI (`agent acp`), built from the protocol
// alone: the CLI is not on npm and cannot be installed here, so this
// profile is Untested. CURSOR_API_KEY is its credential.
var Cursor = Profile{
	Type: events.EngineCursor, Name: "Cursor agent", Provider: "cursor",
	Args:         []string{"acp"},
	DefaultModel: "auto",
	KeyEnv:       []string{"CURSOR_API_KEY"},
	Setup: func(in SetupInput) ([]string, error) {
		return []string{"CURSOR_API_KEY=" + in.Cred.APIKey}, nil
	},
	Tools: ToolNames{
		"read": events.ToolRead, "write": events.ToolWrite, "edit": events.ToolEdit, "ls": events.ToolList,
		"glob": events.ToolGlob, "grep": events.ToolGrep, "shell": events.ToolBash, "task": events.ToolAgent,
		"update_todos": events.ToolTodoWrite, "updatetodos": events.ToolTodoWrite, "create_plan": events.ToolExitPlanMode,
		"createplan": events.ToolExitPlanMode, "web_search": events.ToolWebSearch, "fetch": events.ToolWebFetch,
	},
	Untested: true,
	Notes:    "Untested: the profile follows the ACP protocol; tool names by kind unless Cursor names them.",
}
