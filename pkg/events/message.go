package events

import "encoding/json"

// UserMessage is a human prompt or an engine-emitted carrier of tool results:
// {"type":"user", MessageBase, "sender","content","synthetic"}. Content holds
// text, image, document and tool_result blocks; nil encodes as [].
type UserMessage struct {
	MessageBase
	Sender    Sender
	Content   []Block
	Synthetic bool // true for tool-result carriers and other engine-made turns
}

// AssistantMessage is model output:
// {"type":"assistant", MessageBase, "content","stopReason","usage"}. Content
// holds text and tool_use blocks (adapters emit at most one tool_use per
// message; the codec does not police that); an empty StopReason and a nil
// Usage are null.
type AssistantMessage struct {
	MessageBase
	Content    []Block
	StopReason StopReason
	Usage      *TokenUsage
}

// ReasoningMessage is the model's visible thinking, its own bubble:
// {"type":"reasoning", MessageBase, "text"}. There is no thinking block.
type ReasoningMessage struct {
	MessageBase
	Text string
}

// CompactBoundary marks where the engine compacted its context:
// {"type":"compact_boundary", MessageBase, "trigger","preTokens"}.
type CompactBoundary struct {
	MessageBase
	Trigger   CompactTrigger
	PreTokens int64 // context size before compaction
}

// StopReason says why an assistant message ended. The vocabulary is
// append-only.
type StopReason string

// The stop reasons.
const (
	StopEndTurn     StopReason = "end_turn"
	StopToolUse     StopReason = "tool_use"
	StopMaxTokens   StopReason = "max_tokens"
	StopInterrupted StopReason = "interrupted" // a tool call that never got its result
)

// Valid reports whether r is one of the stop reasons.
func (r StopReason) Valid() bool {
	return oneOf(r, []StopReason{StopEndTurn, StopToolUse, StopMaxTokens, StopInterrupted})
}

// CompactTrigger says who asked for a compaction.
type CompactTrigger string

// The compaction triggers.
const (
	TriggerManual CompactTrigger = "manual"
	TriggerAuto   CompactTrigger = "auto"
)

// Valid reports whether t is manual or auto.
func (t CompactTrigger) Valid() bool { return t == TriggerManual || t == TriggerAuto }

// OutputType implements Output.
func (UserMessage) OutputType() string { return TypeUser }

// OutputType implements Output.
func (AssistantMessage) OutputType() string { return TypeAssistant }

// OutputType implements Output.
func (ReasoningMessage) OutputType() string { return TypeReasoning }

// OutputType implements Output.
func (CompactBoundary) OutputType() string { return TypeCompactBoundary }

var (
	userBlocks      = []string{BlockText, BlockImage, BlockDocument, BlockToolResult}
	assistantBlocks = []string{BlockText, BlockToolUse}
)

// MarshalJSON implements json.Marshaler.
func (m UserMessage) MarshalJSON() ([]byte, error) {
	base, err := m.wire(TypeUser)
	content, cerr := encodeContent("content", m.Content, userBlocks...)
	if err = firstErr(err, cerr); err != nil {
		return nil, encodeErr(TypeUser, err)
	}
	return marshal(struct {
		baseWire
		Sender    Sender            `json:"sender"`
		Content   []json.RawMessage `json:"content"`
		Synthetic bool              `json:"synthetic"`
	}{base, m.Sender, content, m.Synthetic})
}

// MarshalJSON implements json.Marshaler.
func (m AssistantMessage) MarshalJSON() ([]byte, error) {
	base, err := m.wire(TypeAssistant)
	content, cerr := encodeContent("content", m.Content, assistantBlocks...)
	if err = firstErr(err, cerr, checkEnum("stopReason", m.StopReason, false)); err != nil {
		return nil, encodeErr(TypeAssistant, err)
	}
	return marshal(struct {
		baseWire
		Content    []json.RawMessage `json:"content"`
		StopReason *string           `json:"stopReason"`
		Usage      *TokenUsage       `json:"usage"`
	}{base, content, nullable(string(m.StopReason)), m.Usage})
}

// MarshalJSON implements json.Marshaler.
func (m ReasoningMessage) MarshalJSON() ([]byte, error) {
	base, err := m.wire(TypeReasoning)
	if err != nil {
		return nil, encodeErr(TypeReasoning, err)
	}
	return marshal(struct {
		baseWire
		Text string `json:"text"`
	}{base, m.Text})
}

// MarshalJSON implements json.Marshaler.
func (m CompactBoundary) MarshalJSON() ([]byte, error) {
	base, err := m.wire(TypeCompactBoundary)
	if err = firstErr(err, checkEnum("trigger", m.Trigger, true)); err != nil {
		return nil, encodeErr(TypeCompactBoundary, err)
	}
	return marshal(struct {
		baseWire
		Trigger   CompactTrigger `json:"trigger"`
		PreTokens int64          `json:"preTokens"`
	}{base, m.Trigger, m.PreTokens})
}

// UnmarshalJSON decodes a user message strictly, as DecodeOutput does.
func (m *UserMessage) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, m) }

// UnmarshalJSON decodes an assistant message strictly, as DecodeOutput does.
func (m *AssistantMessage) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, m) }

// UnmarshalJSON decodes a reasoning message strictly, as DecodeOutput does.
func (m *ReasoningMessage) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, m) }

// UnmarshalJSON decodes a compact boundary strictly, as DecodeOutput does.
func (m *CompactBoundary) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, m) }

func decodeUser(d *dec) Output {
	s := d.obj("sender")
	return UserMessage{
		MessageBase: decodeBase(d),
		Sender:      Sender{ID: s.str("id"), Name: s.str("name")},
		Content:     decodeContent(d, "content", userBlocks...),
		Synthetic:   d.boolean("synthetic"),
	}
}

func decodeAssistant(d *dec) Output {
	return AssistantMessage{
		MessageBase: decodeBase(d),
		Content:     decodeContent(d, "content", assistantBlocks...),
		StopReason:  readEnum[StopReason](d, "stopReason", false),
		Usage:       decodeUsage(d, "usage"),
	}
}

func decodeReasoning(d *dec) Output {
	return ReasoningMessage{MessageBase: decodeBase(d), Text: d.str("text")}
}

func decodeCompactBoundary(d *dec) Output {
	return CompactBoundary{
		MessageBase: decodeBase(d),
		Trigger:     readEnum[CompactTrigger](d, "trigger", true),
		PreTokens:   d.int64("preTokens"),
	}
}
