package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Line is one stdout line of `claude --output-format stream-json`, decoded
// into the fields the adapter reads. Lines of every type share this one
// struct; fields a type does not carry stay zero. The CLI adds fields and
// reorders keys between versions, so nothing here depends on either.
type Line struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	UUID      string `json:"uuid"`
	// ParentToolUseID is set on the lines of a sub-agent: the id of the
	// Agent (Task) call that started it.
	ParentToolUseID string `json:"parent_tool_use_id"`

	// assistant and user
	Message *Message `json:"-"`
	Aborted bool     `json:"aborted"` // an assistant message cut short by an interrupt
	// IsAPIErrorMessage marks the assistant message the CLI makes up from a
	// failed model call; the result line carries the same error.
	IsAPIErrorMessage bool `json:"is_api_error_message"`

	// stream_event
	Event *StreamEvent `json:"event"`

	// system/init
	Model      string      `json:"model"`
	Tools      []string    `json:"tools"`
	MCPServers []mcpStatus `json:"mcp_servers"`
	Version    string      `json:"claude_code_version"`

	// system/compact_boundary
	CompactMetadata *struct {
		Trigger   string `json:"trigger"`
		PreTokens int64  `json:"pre_tokens"`
	} `json:"compact_metadata"`

	// system/api_retry
	Attempt     int `json:"attempt"`
	MaxRetries  int `json:"max_retries"`
	ErrorStatus int `json:"error_status"`

	// rate_limit_event
	RateLimitInfo *RateLimitInfo `json:"rate_limit_info"`

	// result
	IsError        bool     `json:"is_error"`
	Result         string   `json:"-"` // the final text
	StopReason     string   `json:"stop_reason"`
	TerminalReason string   `json:"terminal_reason"`
	NumTurns       int      `json:"num_turns"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	Usage          *Usage   `json:"usage"`
	Errors         []string `json:"errors"`
	APIErrorStatus int      `json:"api_error_status"`
	// StructuredOutput is the document of a --json-schema turn: the input
	// the model called the StructuredOutput tool with.
	StructuredOutput json.RawMessage `json:"structured_output"`

	// control_request (CLI to host) and control_response (CLI's answer)
	RequestID string           `json:"request_id"`
	Request   *ControlRequest  `json:"-"`
	Response  *ControlResponse `json:"-"`
}

type mcpStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// Message is the Anthropic message of an assistant or user line. The CLI
// writes one content block per assistant line; the lines of one model
// message share ID.
type Message struct {
	ID         string  `json:"id"`
	Role       string  `json:"role"`
	Model      string  `json:"model"`
	Content    Content `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      *Usage  `json:"usage"`
}

// Content is a message's content: a plain string (some user lines) or blocks.
type Content []ContentBlock

// UnmarshalJSON accepts a string as one text block.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: s}}
		return nil
	}
	var blocks []ContentBlock
	if err := json.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// ContentBlock is one Anthropic content block.
type ContentBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// Usage is Anthropic token usage.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// StreamEvent is the raw Anthropic SSE event a stream_event line carries.
type StreamEvent struct {
	Type         string        `json:"type"`
	Index        int           `json:"index"`
	ContentBlock *ContentBlock `json:"content_block"`
	Delta        *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

// RateLimitInfo is the payload of a rate_limit_event line.
type RateLimitInfo struct {
	Status        string  `json:"status"`
	ResetsAt      float64 `json:"resetsAt"`
	RateLimitType string  `json:"rateLimitType"`
	Utilization   float64 `json:"utilization"`
}

// ControlRequest is the "request" of a control_request the CLI sends.
type ControlRequest struct {
	Subtype                 string          `json:"subtype"`
	ToolName                string          `json:"tool_name"`
	Input                   json.RawMessage `json:"input"`
	ToolUseID               string          `json:"tool_use_id"`
	RequiresUserInteraction bool            `json:"requires_user_interaction"`
}

// ControlResponse is the "response" of a control_response the CLI sends.
type ControlResponse struct {
	Subtype   string `json:"subtype"` // success or error
	RequestID string `json:"request_id"`
	Error     string `json:"error"`
}

// errNotObject is returned by DecodeLine for a line that is not a JSON object.
var errNotObject = errors.New("not a JSON object")

// DecodeLine decodes one stdout line. Blank lines and non-objects are errors
// (the caller skips them); unknown fields are ignored. It never panics.
func DecodeLine(b []byte) (Line, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Line{}, errNotObject
	}
	// The fields whose shape depends on the line type are decoded only for
	// that type, so a new line type that reuses a name ("message" as a
	// string, say) does not make the line undecodable.
	var w struct {
		Line
		Message  json.RawMessage `json:"message"`
		Result   json.RawMessage `json:"result"`
		Request  json.RawMessage `json:"request"`
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return Line{}, fmt.Errorf("decode stream-json line: %w", err)
	}
	l := w.Line
	if l.Type == "" {
		return Line{}, errors.New("decode stream-json line: no type")
	}
	var err error
	switch l.Type {
	case "assistant", "user":
		err = decodeOptional(w.Message, &l.Message)
	case "result":
		if len(w.Result) > 0 && w.Result[0] == '"' {
			err = json.Unmarshal(w.Result, &l.Result)
		}
	case "control_request":
		err = decodeOptional(w.Request, &l.Request)
	case "control_response":
		err = decodeOptional(w.Response, &l.Response)
	}
	if err != nil {
		return Line{}, fmt.Errorf("decode stream-json %s line: %w", l.Type, err)
	}
	return l, nil
}

// decodeOptional decodes raw into *dst unless it is absent or null.
func decodeOptional[T any](raw json.RawMessage, dst **T) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	*dst = v
	return nil
}
