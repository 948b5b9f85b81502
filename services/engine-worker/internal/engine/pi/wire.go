package pi

import (
	"bytes"
	"encoding/json"
	"errors"

	"clopen.dev/pkg/events"
)

// Event is one stdout line of `pi --mode rpc`: a response to a command
// (type "response", with the command's id), an agent event, or an
// extension UI request. Fields of the kinds Clopen reads are decoded;
// "message" stays raw because it is an object in message events and a
// string in UI requests, and the large partial messages of message_update
// are never decoded at all.
type Event struct {
	Type string `json:"type"`

	ID      string          `json:"id"` // response, extension_ui_request
	Command string          `json:"command"`
	Success *bool           `json:"success"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`

	Message               json.RawMessage `json:"message"`
	AssistantMessageEvent *AssistantEvent `json:"assistantMessageEvent"`

	ToolCallID string          `json:"toolCallId"` // tool_execution_*
	ToolName   string          `json:"toolName"`
	Args       json.RawMessage `json:"args"`
	Result     json.RawMessage `json:"result"` // tool_execution_end: a ToolResult; compaction_end: a compaction
	IsError    bool            `json:"isError"`

	Method      string `json:"method"` // extension_ui_request
	Title       string `json:"title"`
	Placeholder string `json:"placeholder"`
	NotifyType  string `json:"notifyType"`

	Reason       string `json:"reason"`       // compaction_*: manual, threshold, overflow
	FinalError   string `json:"finalError"`   // auto_retry_end
	Attempt      int    `json:"attempt"`      // auto_retry_start, auto_retry_end
	ErrorMessage string `json:"errorMessage"` // auto_retry_start, compaction_end
	Aborted      bool   `json:"aborted"`
}

// AssistantEvent is a streaming delta of an assistant message.
type AssistantEvent struct {
	Type         string `json:"type"` // text_start|_delta|_end, thinking_*, toolcall_*, done, error
	ContentIndex int    `json:"contentIndex"`
	Delta        string `json:"delta"`
}

// Message is an agent message: user, assistant or toolResult.
type Message struct {
	Role         string  `json:"role"`
	Content      Content `json:"content"`
	Model        string  `json:"model"`
	Provider     string  `json:"provider"`
	Usage        *Usage  `json:"usage"`
	StopReason   string  `json:"stopReason"` // stop, length, toolUse, error, aborted
	ErrorMessage string  `json:"errorMessage"`
	ResponseID   string  `json:"responseId"`
}

// Content is a message's content: a string or a list of blocks.
type Content []Block

// UnmarshalJSON accepts a plain string as one text block.
func (c *Content) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: s}}
		return nil
	}
	var blocks []Block
	if err := json.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// Block is one content block.
type Block struct {
	Type      string          `json:"type"` // text, thinking, toolCall, image
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Usage is an assistant message's token usage and cost (USD).
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Cost       struct {
		Total float64 `json:"total"`
	} `json:"cost"`
}

// ToolResult is a finished tool's result.
type ToolResult struct {
	Content Content `json:"content"`
}

// compaction is the result of a compaction.
type compaction struct {
	TokensBefore int64 `json:"tokensBefore"`
}

// ModelInfo is a model as pi describes it (pi-ai's Model): each entry of
// get_available_models, and the answer of set_model.
type ModelInfo struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Provider  string `json:"provider"`
	Reasoning bool   `json:"reasoning"`
	// ThinkingLevelMap maps pi's thinking levels to the provider's: a
	// level mapped to null is not offered, and xhigh only when it is mapped.
	ThinkingLevelMap map[string]json.RawMessage `json:"thinkingLevelMap"`
	Input            []string                   `json:"input"` // text, image
	// Cost is the price per million tokens pi computes turn costs with.
	Cost          *events.ModelCost `json:"cost"`
	ContextWindow int64             `json:"contextWindow"`
	MaxTokens     int64             `json:"maxTokens"`
}

// DecodeModels decodes the data of get_available_models.
func DecodeModels(data []byte) ([]ModelInfo, error) {
	var d struct {
		Models []ModelInfo `json:"models"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	return d.Models, nil
}

// state is the data of get_state.
type state struct {
	SessionFile string `json:"sessionFile"`
	SessionID   string `json:"sessionId"`
	Model       *struct {
		ID        string `json:"id"`
		Provider  string `json:"provider"`
		Reasoning bool   `json:"reasoning"`
	} `json:"model"`
	ThinkingLevel string `json:"thinkingLevel"`
}

// errNotObject is returned for lines that are not one JSON object.
var errNotObject = errors.New("pi: line is not a JSON object")

// DecodeLine decodes one stdout line. Unknown types and fields are kept
// for the caller to ignore; a line that is not a JSON object is an error.
func DecodeLine(b []byte) (Event, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Event{}, errNotObject
	}
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// message decodes the event's message object; ok is false when it has none.
func (ev Event) message() (Message, bool) {
	if len(ev.Message) == 0 || ev.Message[0] != '{' {
		return Message{}, false
	}
	var m Message
	if json.Unmarshal(ev.Message, &m) != nil {
		return Message{}, false
	}
	return m, true
}
