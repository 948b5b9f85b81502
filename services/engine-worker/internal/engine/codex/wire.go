package codex

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Message is one line of the app-server protocol: JSON-RPC 2.0 without the
// "jsonrpc" field. A request has a method and an id, a notification a
// method only, and a response an id with a result or an error. Params and
// results stay raw until the converter or a caller reads them.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"` // a number or a string
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error implements error: the server's message.
func (e *RPCError) Error() string { return e.Message }

// IsRequest reports whether m is a request the server sends the client
// (an approval, a question) that must be answered.
func (m Message) IsRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// IsResponse reports whether m answers one of the client's requests.
func (m Message) IsResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// errNotObject is returned for lines that are not one JSON object.
var errNotObject = errors.New("codex: line is not a JSON object")

// DecodeLine decodes one stdout line. Unknown fields and methods are kept
// for the caller to ignore; a line that is not a JSON object is an error.
func DecodeLine(b []byte) (Message, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Message{}, errNotObject
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return Message{}, err
	}
	return m, nil
}

// Item is a thread item (ThreadItem in the app-server schema), flattened:
// only the fields of the item types Clopen converts.
type Item struct {
	Type string `json:"type"`
	ID   string `json:"id"`

	Text    string   `json:"text"`    // agentMessage
	Summary []string `json:"summary"` // reasoning
	Content []string `json:"content"` // reasoning (raw text, shown only when there is no summary)

	Command          string          `json:"command"` // commandExecution
	CommandActions   []CommandAction `json:"commandActions"`
	Status           string          `json:"status"` // commandExecution, fileChange, mcpToolCall
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`

	Changes []FileChange `json:"changes"` // fileChange

	Server    string          `json:"server"` // mcpToolCall
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    *MCPResult      `json:"result"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`

	Query  string           `json:"query"` // webSearch
	Action *WebSearchAction `json:"action"`
}

// CommandAction is codex's parse of one part of a shell command.
type CommandAction struct {
	Type    string `json:"type"`
	Command string `json:"command"`
}

// FileChange is one file of a fileChange item.
type FileChange struct {
	Path string `json:"path"`
	Kind struct {
		Type     string `json:"type"` // add, delete, update
		MovePath string `json:"move_path"`
	} `json:"kind"`
	Diff string `json:"diff"`
}

// MCPResult is an MCP tool's result.
type MCPResult struct {
	Content []json.RawMessage `json:"content"`
}

// WebSearchAction is what a web search did.
type WebSearchAction struct {
	Type    string   `json:"type"`
	Query   string   `json:"query"`
	Queries []string `json:"queries"`
	URL     string   `json:"url"`
}

// itemParams are the params of item/started and item/completed.
type itemParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Item     Item   `json:"item"`
}

// deltaParams are the params of the item delta notifications.
type deltaParams struct {
	ThreadID     string `json:"threadId"`
	ItemID       string `json:"itemId"`
	Delta        string `json:"delta"`
	SummaryIndex int    `json:"summaryIndex"`
}

// tokenBreakdown is one TokenUsageBreakdown.
type tokenBreakdown struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
}

// tokenUsageParams are the params of thread/tokenUsage/updated.
type tokenUsageParams struct {
	ThreadID   string `json:"threadId"`
	TurnID     string `json:"turnId"`
	TokenUsage struct {
		Total tokenBreakdown `json:"total"`
		Last  tokenBreakdown `json:"last"`
	} `json:"tokenUsage"`
}

// rateLimitWindow is one rate-limit window.
type rateLimitWindow struct {
	UsedPercent        float64 `json:"usedPercent"`
	WindowDurationMins *int64  `json:"windowDurationMins"`
	ResetsAt           *int64  `json:"resetsAt"`
}

// rateLimitsParams are the params of account/rateLimits/updated.
type rateLimitsParams struct {
	RateLimits struct {
		Primary              *rateLimitWindow `json:"primary"`
		Secondary            *rateLimitWindow `json:"secondary"`
		RateLimitReachedType json.RawMessage  `json:"rateLimitReachedType"`
	} `json:"rateLimits"`
}

// TurnError is a failed turn's error.
type TurnError struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo"`
	AdditionalDetails string          `json:"additionalDetails"`
}

// turnParams are the params of turn/started and turn/completed.
type turnParams struct {
	ThreadID string `json:"threadId"`
	Turn     struct {
		ID     string     `json:"id"`
		Status string     `json:"status"` // completed, interrupted, failed, inProgress
		Error  *TurnError `json:"error"`
	} `json:"turn"`
}

// errorParams are the params of the error notification.
type errorParams struct {
	ThreadID  string    `json:"threadId"`
	Error     TurnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
}

// planParams are the params of turn/plan/updated: codex's todo list.
type planParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Plan     []struct {
		Step   string `json:"step"`
		Status string `json:"status"` // pending, inProgress, completed
	} `json:"plan"`
}

// warningParams are the params of warning, configWarning and deprecationNotice.
type warningParams struct {
	ThreadID string `json:"threadId"`
	Message  string `json:"message"`
	Summary  string `json:"summary"`
}

// mcpStartupParams are the params of mcpServer/startupStatus/updated.
type mcpStartupParams struct {
	ThreadID string `json:"threadId"`
	Name     string `json:"name"`
	Status   string `json:"status"` // starting, ready, failed, cancelled
}

// threadResult is the result of thread/start, thread/resume and thread/fork.
type threadResult struct {
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
	Model string `json:"model"`
}

// turnStartResult is the result of turn/start.
type turnStartResult struct {
	Turn struct {
		ID string `json:"id"`
	} `json:"turn"`
}

// Server requests (approvals and questions).

// commandApprovalParams are the params of item/commandExecution/requestApproval.
type commandApprovalParams struct {
	ThreadID       string          `json:"threadId"`
	ItemID         string          `json:"itemId"`
	Command        string          `json:"command"`
	CommandActions []CommandAction `json:"commandActions"`
	Reason         string          `json:"reason"`
}

// fileApprovalParams are the params of item/fileChange/requestApproval.
type fileApprovalParams struct {
	ThreadID string `json:"threadId"`
	ItemID   string `json:"itemId"`
	Reason   string `json:"reason"`
}

// userInputParams are the params of item/tool/requestUserInput.
type userInputParams struct {
	ThreadID  string `json:"threadId"`
	ItemID    string `json:"itemId"`
	Questions []struct {
		ID       string `json:"id"`
		Header   string `json:"header"`
		Question string `json:"question"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"`
}

// elicitationParams are the params of mcpServer/elicitation/request. Codex
// asks its MCP tool approvals this way, marked in _meta.
type elicitationParams struct {
	ThreadID   string `json:"threadId"`
	ServerName string `json:"serverName"`
	Message    string `json:"message"`
	Meta       struct {
		ApprovalKind string          `json:"codex_approval_kind"`
		ToolName     string          `json:"tool_name"`
		ToolParams   json.RawMessage `json:"tool_params"`
	} `json:"_meta"`
}
