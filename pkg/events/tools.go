package events

import "strings"

// ToolName is a canonical tool name: the name every adapter gives a tool_use
// block, whatever the engine called the tool, so that clients render each
// tool one way. The set is append-only.
type ToolName string

// The canonical tool names, in the order of CanonicalToolNames.
const (
	ToolBash             ToolName = "Bash"
	ToolRead             ToolName = "Read"
	ToolEdit             ToolName = "Edit"
	ToolWrite            ToolName = "Write"
	ToolPatch            ToolName = "Patch"
	ToolNotebookEdit     ToolName = "NotebookEdit"
	ToolGlob             ToolName = "Glob"
	ToolGrep             ToolName = "Grep"
	ToolList             ToolName = "List"
	ToolWebFetch         ToolName = "WebFetch"
	ToolWebSearch        ToolName = "WebSearch"
	ToolTodoWrite        ToolName = "TodoWrite"
	ToolAskUserQuestion  ToolName = "AskUserQuestion"
	ToolEnterPlanMode    ToolName = "EnterPlanMode"
	ToolExitPlanMode     ToolName = "ExitPlanMode"
	ToolAgent            ToolName = "Agent"
	ToolWorkflow         ToolName = "Workflow"
	ToolTaskOutput       ToolName = "TaskOutput"
	ToolTaskStop         ToolName = "TaskStop"
	ToolTaskCreate       ToolName = "TaskCreate"
	ToolTaskGet          ToolName = "TaskGet"
	ToolTaskUpdate       ToolName = "TaskUpdate"
	ToolTaskList         ToolName = "TaskList"
	ToolListMcpResources ToolName = "ListMcpResources"
	ToolReadMcpResource  ToolName = "ReadMcpResource"
	ToolConfig           ToolName = "Config"
	ToolEnterWorktree    ToolName = "EnterWorktree"
	ToolExitWorktree     ToolName = "ExitWorktree"
	ToolSkill            ToolName = "Skill"
	ToolToolSearch       ToolName = "ToolSearch"
	ToolLsp              ToolName = "Lsp"
	ToolREPL             ToolName = "REPL"
	ToolSendMessage      ToolName = "SendMessage"
	ToolListAgents       ToolName = "ListAgents"
	ToolReadAgent        ToolName = "ReadAgent"
	ToolSendInbox        ToolName = "SendInbox"
	ToolContextBoard     ToolName = "ContextBoard"
	ToolScheduleWakeup   ToolName = "ScheduleWakeup"
	ToolMonitor          ToolName = "Monitor"
	ToolPushNotification ToolName = "PushNotification"
	ToolRemoteTrigger    ToolName = "RemoteTrigger"
	ToolCronCreate       ToolName = "CronCreate"
	ToolCronDelete       ToolName = "CronDelete"
	ToolCronList         ToolName = "CronList"
)

var canonicalTools = []ToolName{
	ToolBash, ToolRead, ToolEdit, ToolWrite, ToolPatch, ToolNotebookEdit, ToolGlob, ToolGrep,
	ToolList, ToolWebFetch, ToolWebSearch, ToolTodoWrite, ToolAskUserQuestion, ToolEnterPlanMode,
	ToolExitPlanMode, ToolAgent, ToolWorkflow, ToolTaskOutput, ToolTaskStop, ToolTaskCreate,
	ToolTaskGet, ToolTaskUpdate, ToolTaskList, ToolListMcpResources, ToolReadMcpResource,
	ToolConfig, ToolEnterWorktree, ToolExitWorktree, ToolSkill, ToolToolSearch, ToolLsp, ToolREPL,
	ToolSendMessage, ToolListAgents, ToolReadAgent, ToolSendInbox, ToolContextBoard,
	ToolScheduleWakeup, ToolMonitor, ToolPushNotification, ToolRemoteTrigger, ToolCronCreate,
	ToolCronDelete, ToolCronList,
}

// MCPToolPrefix starts the name of every MCP tool: mcp__<server>__<tool>.
// Such names pass through canonicalisation unchanged.
const MCPToolPrefix = "mcp__"

// UnknownToolPrefix starts the canonical name of a tool no mapping knows:
// "Unknown:<raw>". Clients render it as a visible error, not a generic box.
const UnknownToolPrefix = "Unknown:"

// CanonicalToolNames returns the canonical tool names in their published
// order. The slice is a copy.
func CanonicalToolNames() []ToolName { return append([]ToolName(nil), canonicalTools...) }

// Valid reports whether n is one of the canonical tool names (MCP and
// Unknown: names are not).
func (n ToolName) Valid() bool { return oneOf(n, canonicalTools) }

// ToCanonicalToolName is the last step of every adapter's tool-name mapping:
// a name with MCPToolPrefix passes through, a canonical name passes through,
// a name already marked unknown passes through, and anything else becomes
// UnknownToolPrefix+raw. Matching is exact ("bash" is not "Bash"); mapping an
// engine's own names ("bash", "read_file") to canonical ones is the adapter's
// job.
func ToCanonicalToolName(raw string) string {
	if strings.HasPrefix(raw, MCPToolPrefix) || strings.HasPrefix(raw, UnknownToolPrefix) || ToolName(raw).Valid() {
		return raw
	}
	return UnknownToolPrefix + raw
}

// IsUnknownTool reports whether name is one ToCanonicalToolName marked
// unknown.
func IsUnknownTool(name string) bool { return strings.HasPrefix(name, UnknownToolPrefix) }

// IsMCPTool reports whether name is an MCP tool, mcp__<server>__<tool>.
func IsMCPTool(name string) bool { return strings.HasPrefix(name, MCPToolPrefix) }
