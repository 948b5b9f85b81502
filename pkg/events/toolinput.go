package events

import "encoding/json"

// The canonical tool inputs: the field names clients read from a tool_use
// block's input. Adapters rename an engine's own fields to these (snake_case
// to camelCase, bundled subcommands split) before they emit. Optional fields
// carry omitempty; fields not listed here may still appear and are passed
// through as the engine sent them.

// BashInput is the input of Bash. Timeout is in milliseconds.
type BashInput struct {
	Command         string `json:"command"`
	Description     string `json:"description,omitempty"`
	Timeout         int64  `json:"timeout,omitempty"`
	RunInBackground bool   `json:"runInBackground,omitempty"`
}

// ReadInput is the input of Read. Offset and Limit count lines; Pages selects
// PDF pages ("1-5").
type ReadInput struct {
	FilePath string `json:"filePath"`
	Offset   int    `json:"offset,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	Pages    string `json:"pages,omitempty"`
}

// EditInput is the input of Edit.
type EditInput struct {
	FilePath   string `json:"filePath"`
	OldString  string `json:"oldString"`
	NewString  string `json:"newString"`
	ReplaceAll bool   `json:"replaceAll,omitempty"`
}

// WriteInput is the input of Write.
type WriteInput struct {
	FilePath string `json:"filePath"`
	Content  string `json:"content"`
}

// PatchInput is the input of Patch: one file's unified diff.
type PatchInput struct {
	FilePath string `json:"filePath"`
	Patch    string `json:"patch"`
}

// GlobInput is the input of Glob.
type GlobInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
}

// GrepInput is the input of Grep. OutputMode is one of GrepContent,
// GrepFilesWithMatches and GrepCount; Before, After and Context are the
// context line counts of grep's -B, -A and -C.
type GrepInput struct {
	Pattern         string `json:"pattern"`
	Path            string `json:"path,omitempty"`
	Glob            string `json:"glob,omitempty"`
	OutputMode      string `json:"outputMode,omitempty"`
	Type            string `json:"type,omitempty"`
	HeadLimit       int    `json:"headLimit,omitempty"`
	Offset          int    `json:"offset,omitempty"`
	Multiline       bool   `json:"multiline,omitempty"`
	CaseInsensitive bool   `json:"caseInsensitive,omitempty"`
	Before          int    `json:"before,omitempty"`
	After           int    `json:"after,omitempty"`
	Context         int    `json:"context,omitempty"`
	LineNumbers     bool   `json:"lineNumbers,omitempty"`
}

// The Grep output modes.
const (
	GrepContent          = "content"
	GrepFilesWithMatches = "files_with_matches"
	GrepCount            = "count"
)

// ListInput is the input of List.
type ListInput struct {
	Path   string   `json:"path,omitempty"`
	Ignore []string `json:"ignore,omitempty"`
}

// WebFetchInput is the input of WebFetch.
type WebFetchInput struct {
	URL    string `json:"url"`
	Prompt string `json:"prompt"`
}

// WebSearchInput is the input of WebSearch.
type WebSearchInput struct {
	Query          string   `json:"query"`
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	BlockedDomains []string `json:"blockedDomains,omitempty"`
}

// AskUserQuestionInput is the input of AskUserQuestion. Answers is added on
// the answer path: question text to the chosen label(s).
type AskUserQuestionInput struct {
	Questions []Question        `json:"questions"`
	Answers   map[string]string `json:"answers,omitempty"`
}

// Question is one question of AskUserQuestion.
type Question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header"`
	Options     []QuestionOption `json:"options"`
	MultiSelect bool             `json:"multiSelect"`
}

// QuestionOption is one choice of a Question.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Markdown    string `json:"markdown,omitempty"`
}

// TodoWriteInput is the input of TodoWrite: the whole list, every time.
type TodoWriteInput struct {
	Todos []Todo `json:"todos"`
}

// Todo is one item of TodoWrite. Status is one of TodoPending,
// TodoInProgress and TodoCompleted (engines' "inProgress" and "cancelled" map
// to in_progress and completed).
type Todo struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm"`
}

// The todo and task statuses; TaskDeleted is valid for TaskUpdate only.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
	TaskDeleted    = "deleted"
)

// TaskCreateInput is the input of TaskCreate.
type TaskCreateInput struct {
	Subject     string          `json:"subject"`
	Description string          `json:"description"`
	ActiveForm  string          `json:"activeForm,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// TaskUpdateInput is the input of TaskUpdate.
type TaskUpdateInput struct {
	TaskID       string          `json:"taskId"`
	Subject      string          `json:"subject,omitempty"`
	Description  string          `json:"description,omitempty"`
	ActiveForm   string          `json:"activeForm,omitempty"`
	Status       string          `json:"status,omitempty"`
	AddBlocks    []string        `json:"addBlocks,omitempty"`
	AddBlockedBy []string        `json:"addBlockedBy,omitempty"`
	Owner        string          `json:"owner,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
}

// AgentInput is the input of Agent (Claude's Task). Adapters accept
// prompt|task|instruction and agent_type|subagent_type|agent, and default
// SubagentType to DefaultSubagentType. Isolation is "" or "worktree".
type AgentInput struct {
	Prompt          string `json:"prompt"`
	Description     string `json:"description"`
	SubagentType    string `json:"subagentType"`
	Model           string `json:"model,omitempty"`
	MaxTurns        int    `json:"maxTurns,omitempty"`
	Isolation       string `json:"isolation,omitempty"`
	RunInBackground bool   `json:"runInBackground,omitempty"`
	Resume          string `json:"resume,omitempty"`
	Name            string `json:"name,omitempty"`
	TeamName        string `json:"teamName,omitempty"`
	Mode            string `json:"mode,omitempty"`
}

// DefaultSubagentType is the SubagentType of an Agent call that names none.
const DefaultSubagentType = "general-purpose"

// WorkflowInput is the input of Workflow. Args is passed through as the
// engine sent it.
type WorkflowInput struct {
	Script          string          `json:"script,omitempty"`
	Name            string          `json:"name,omitempty"`
	Description     string          `json:"description,omitempty"`
	Title           string          `json:"title,omitempty"`
	Args            json.RawMessage `json:"args,omitempty"`
	ScriptPath      string          `json:"scriptPath,omitempty"`
	ResumeFromRunID string          `json:"resumeFromRunId,omitempty"`
}

// SkillInput is the input of Skill.
type SkillInput struct {
	Skill string `json:"skill"`
	Args  string `json:"args,omitempty"`
}

// LspInput is the input of Lsp.
type LspInput struct {
	Operation string `json:"operation"`
	FilePath  string `json:"filePath,omitempty"`
	Line      int    `json:"line,omitempty"`
	Column    int    `json:"column,omitempty"`
	Symbol    string `json:"symbol,omitempty"`
}
