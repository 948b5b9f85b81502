package acp

import "encoding/json"

// The ACP v1 messages the client reads and writes: only the fields it uses.
// Agents add fields and _meta freely; decoding ignores what is not here, and
// the fields whose shape differs per agent (rawInput, rawOutput, _meta)
// stay raw for the per-agent code to read.

// ProtocolVersion is the ACP version the client speaks.
const ProtocolVersion = 1

// InitializeResponse is what initialize returns.
type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AgentInfo         *Implementation   `json:"agentInfo"`
	AuthMethods       []AuthMethod      `json:"authMethods"`
}

// AgentCapabilities are what an agent advertises.
type AgentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  PromptCapabilities  `json:"promptCapabilities"`
	MCPCapabilities     MCPCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities SessionCapabilities `json:"sessionCapabilities"`
}

// PromptCapabilities say which content a prompt may carry besides text.
type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// MCPCapabilities say which MCP transports session/new accepts besides stdio.
type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// SessionCapabilities are the optional session methods; each is an object
// when supported.
type SessionCapabilities struct {
	Fork   json.RawMessage `json:"fork"`
	Resume json.RawMessage `json:"resume"`
	List   json.RawMessage `json:"list"`
	Close  json.RawMessage `json:"close"`
}

// has reports whether an optional capability object is present.
func has(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null" && string(raw) != "false"
}

// Implementation names an agent.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

// AuthMethod is one way an agent can authenticate.
type AuthMethod struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// NewSessionResponse is what session/new (and session/load, session/resume,
// session/fork, less the id) return.
type NewSessionResponse struct {
	SessionID     string         `json:"sessionId"`
	Modes         *ModeState     `json:"modes"`
	Models        *ModelState    `json:"models"`
	ConfigOptions []ConfigOption `json:"configOptions"`
}

// ModeState lists the session modes.
type ModeState struct {
	CurrentModeID  string `json:"currentModeId"`
	AvailableModes []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"availableModes"`
}

// ModelState lists the session models (unstable session/set_model).
type ModelState struct {
	CurrentModelID  string      `json:"currentModelId"`
	AvailableModels []ModelInfo `json:"availableModels"`
}

// ModelInfo is one model of a ModelState.
type ModelInfo struct {
	ModelID string `json:"modelId"`
	Name    string `json:"name"`
}

// ConfigOption is one session configuration option (a select, a boolean).
type ConfigOption struct {
	ID           string        `json:"id"`
	Name         string        `json:"name"`
	Category     string        `json:"category"`
	Type         string        `json:"type"`
	CurrentValue any           `json:"currentValue"`
	Options      []OptionValue `json:"options"`
}

// OptionValue is one value of a select option, or a named group of values
// (the schema allows either list; Values flattens both).
type OptionValue struct {
	Value   any           `json:"value"`
	Name    string        `json:"name"`
	Group   string        `json:"group"`
	Options []OptionValue `json:"options"`
}

// Values lists the option's values, groups flattened, in order.
func (o ConfigOption) Values() []OptionValue {
	var out []OptionValue
	var walk func([]OptionValue, int)
	walk = func(vs []OptionValue, depth int) {
		for _, v := range vs {
			switch {
			case v.Group != "" || len(v.Options) > 0:
				if depth < 2 { // the schema nests one level
					walk(v.Options, depth+1)
				}
			default:
				out = append(out, v)
			}
		}
	}
	walk(o.Options, 0)
	return out
}

// SessionNotification is the params of session/update.
type SessionNotification struct {
	SessionID string          `json:"sessionId"`
	Update    json.RawMessage `json:"update"`
}

// Update is one session/update, flattened: SessionUpdate says which kind,
// and only that kind's fields are set.
type Update struct {
	SessionUpdate string `json:"sessionUpdate"`
	// agent_message_chunk, agent_thought_chunk, user_message_chunk
	Content   json.RawMessage `json:"content"`
	MessageID string          `json:"messageId"`
	// tool_call, tool_call_update
	ToolCall
	// plan
	Entries []PlanEntry `json:"entries"`
	// usage_update
	Used *int64 `json:"used"`
	Size *int64 `json:"size"`
	Cost *Cost  `json:"cost"`
	// config_option_update
	ConfigOptions []ConfigOption `json:"configOptions"`
	// current_mode_update
	CurrentModeID string          `json:"currentModeId"`
	Meta          json.RawMessage `json:"_meta"`
}

// ToolCall holds the fields of tool_call and tool_call_update, and the
// toolCall of a permission request. A field an update leaves out is
// unchanged.
type ToolCall struct {
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title"`
	Kind       string          `json:"kind"`
	Status     string          `json:"status"`
	RawInput   json.RawMessage `json:"rawInput"`
	RawOutput  json.RawMessage `json:"rawOutput"`
	// Content is a list of {type: content|diff|terminal}. In an Update
	// the chunk's content shadows it; decodeUpdate moves it here.
	Content   json.RawMessage `json:"content"`
	Locations []struct {
		Path string `json:"path"`
		Line int    `json:"line"`
	} `json:"locations"`
}

// PlanEntry is one entry of a plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// Cost is a session's running cost.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// ContentBlock is a content block (of a chunk, or of a tool call's content).
type ContentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MimeType string `json:"mimeType"`
	URI      string `json:"uri"`
	Resource *struct {
		URI  string `json:"uri"`
		Text string `json:"text"`
	} `json:"resource"`
}

// ToolCallContent is one entry of a tool call's content.
type ToolCallContent struct {
	Type       string          `json:"type"` // content, diff, terminal
	Content    json.RawMessage `json:"content"`
	Path       string          `json:"path"`
	OldText    *string         `json:"oldText"`
	NewText    string          `json:"newText"`
	TerminalID string          `json:"terminalId"`
}

// PermissionRequest is the params of session/request_permission.
type PermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCall           `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// PermissionOption is one answer a permission request offers.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"` // allow_once, allow_always, reject_once, reject_always
}

// PromptResponse is what session/prompt returns when the turn ends.
type PromptResponse struct {
	StopReason string          `json:"stopReason"`
	Usage      *PromptUsage    `json:"usage"`
	Meta       json.RawMessage `json:"_meta"`
}

// PromptUsage is a turn's token usage (unstable in the schema; copilot,
// opencode and the Claude adapters send it).
type PromptUsage struct {
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	CachedReadTokens  int64 `json:"cachedReadTokens"`
	CachedWriteTokens int64 `json:"cachedWriteTokens"`
	ThoughtTokens     int64 `json:"thoughtTokens"`
}

// The stop reasons of a PromptResponse.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// ReadTextFileRequest is the params of fs/read_text_file.
type ReadTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line"`
	Limit     *int   `json:"limit"`
}

// WriteTextFileRequest is the params of fs/write_text_file.
type WriteTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

// decodeUpdate decodes the update of a session/update.
func decodeUpdate(raw json.RawMessage) (Update, error) {
	var u Update
	if err := json.Unmarshal(raw, &u); err != nil {
		return Update{}, err
	}
	if u.SessionUpdate == "tool_call" || u.SessionUpdate == "tool_call_update" {
		u.ToolCall.Content, u.Content = u.Content, nil
	}
	return u, nil
}
