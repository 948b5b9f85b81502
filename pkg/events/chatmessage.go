package events

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ChatMessage is the data of chat:message: a persisted message as saved,
// {"message","messageRowId","parentMessageRowId","senderId","senderName",
// "engine","usage"}. An empty ParentMessageRowID (the first message) and a nil
// Usage are null.
type ChatMessage struct {
	Message            Output // a persisted message (see IsPersisted) or an Unknown
	MessageRowID       string // the message's row id in the messages DAG
	ParentMessageRowID string
	SenderID           string
	SenderName         string
	Engine             EngineType
	Usage              *TokenUsage
}

// ChatPartial is the data of chat:partial, {"eventType","deltaText",
// "reasoning"}: a streaming frame. "start" opens a text or reasoning stream,
// "update" carries the next delta (deltaText is present for updates only),
// "end" closes it. It never carries the text so far: the original resent the
// whole text with every delta; a client that needs the text so far
// accumulates deltas or reads a snapshot.
type ChatPartial struct {
	EventType PartialEventType
	DeltaText string
	Reasoning bool
}

// PartialEventType is the "eventType" of chat:partial.
type PartialEventType string

// The partial event types.
const (
	PartialStart  PartialEventType = "start"
	PartialUpdate PartialEventType = "update"
	PartialEnd    PartialEventType = "end"
)

// Valid reports whether t is start, update or end.
func (t PartialEventType) Valid() bool {
	return t == PartialStart || t == PartialUpdate || t == PartialEnd
}

// ChatNotification is the data of chat:notification:
// {"notification":{"type","title","message"}} where type is the level.
type ChatNotification struct {
	Level   NotificationLevel
	Title   string
	Message string
}

// ChatRateLimit is the data of chat:rate_limit: {"engine","accountId",
// "status","utilization","resetsAt","rateLimitType"}, the RateLimit of an
// engine account. ResetsAt 0 and an empty RateLimitType are null.
type ChatRateLimit struct {
	Engine        EngineType
	AccountID     string
	Status        RateLimitStatus
	Utilization   float64
	ResetsAt      int64
	RateLimitType RateLimitType
}

// ChatComplete is the data of chat:complete: the engine's result ended the
// turn. Every field is optional and omitted when zero:
// {"stopReason","usage","totalCostUsd","numTurns"}.
type ChatComplete struct {
	StopReason   string      `json:"stopReason,omitempty"`
	Usage        *TokenUsage `json:"usage,omitempty"`
	TotalCostUSD float64     `json:"totalCostUsd,omitempty"`
	NumTurns     int         `json:"numTurns,omitempty"`
}

// ChatType implements ChatData.
func (ChatMessage) ChatType() ChatEventType { return ChatTypeMessage }

// ChatType implements ChatData.
func (ChatPartial) ChatType() ChatEventType { return ChatTypePartial }

// ChatType implements ChatData.
func (ChatNotification) ChatType() ChatEventType { return ChatTypeNotification }

// ChatType implements ChatData.
func (ChatRateLimit) ChatType() ChatEventType { return ChatTypeRateLimit }

// ChatType implements ChatData.
func (ChatComplete) ChatType() ChatEventType { return ChatTypeComplete }

func (ChatMessage) isChatData()      {}
func (ChatPartial) isChatData()      {}
func (ChatNotification) isChatData() {}
func (ChatRateLimit) isChatData()    {}
func (ChatComplete) isChatData()     {}

// MarshalJSON implements json.Marshaler. It refuses a Message that is not a
// persisted message.
func (m ChatMessage) MarshalJSON() ([]byte, error) {
	if err := checkPersisted(m.Message); err != nil {
		return nil, encodeErr(string(ChatTypeMessage), fmt.Errorf("message: %w", err))
	}
	msg, err := EncodeOutput(m.Message)
	if err = firstErr(err, checkEnum("engine", m.Engine, false)); err != nil {
		return nil, encodeErr(string(ChatTypeMessage), err)
	}
	return marshal(struct {
		Message            json.RawMessage `json:"message"`
		MessageRowID       string          `json:"messageRowId"`
		ParentMessageRowID *string         `json:"parentMessageRowId"`
		SenderID           string          `json:"senderId"`
		SenderName         string          `json:"senderName"`
		Engine             EngineType      `json:"engine"`
		Usage              *TokenUsage     `json:"usage"`
	}{msg, m.MessageRowID, nullable(m.ParentMessageRowID), m.SenderID, m.SenderName, m.Engine, m.Usage})
}

func checkPersisted(o Output) error {
	if isNil(o) {
		return errors.New("missing")
	}
	if _, unknown := o.(Unknown); !unknown && !IsPersisted(o) {
		return fmt.Errorf("a %s is not a persisted message", o.OutputType())
	}
	return nil
}

// MarshalJSON implements json.Marshaler.
func (p ChatPartial) MarshalJSON() ([]byte, error) {
	if err := checkEnum("eventType", p.EventType, true); err != nil {
		return nil, encodeErr(string(ChatTypePartial), err)
	}
	var delta *string
	if p.EventType == PartialUpdate {
		delta = &p.DeltaText
	}
	return marshal(struct {
		EventType PartialEventType `json:"eventType"`
		DeltaText *string          `json:"deltaText,omitempty"`
		Reasoning bool             `json:"reasoning"`
	}{p.EventType, delta, p.Reasoning})
}

// MarshalJSON implements json.Marshaler.
func (n ChatNotification) MarshalJSON() ([]byte, error) {
	if err := checkEnum("notification.type", n.Level, true); err != nil {
		return nil, encodeErr(string(ChatTypeNotification), err)
	}
	type notice struct {
		Type    NotificationLevel `json:"type"`
		Title   string            `json:"title"`
		Message string            `json:"message"`
	}
	return marshal(struct {
		Notification notice `json:"notification"`
	}{notice{n.Level, n.Title, n.Message}})
}

// MarshalJSON implements json.Marshaler.
func (r ChatRateLimit) MarshalJSON() ([]byte, error) {
	w, err := newRateLimitWire(r.Status, r.Utilization, r.ResetsAt, r.RateLimitType)
	if err = firstErr(err, checkEnum("engine", r.Engine, false)); err != nil {
		return nil, encodeErr(string(ChatTypeRateLimit), err)
	}
	return marshal(struct {
		Engine    EngineType `json:"engine"`
		AccountID string     `json:"accountId"`
		rateLimitWire
	}{r.Engine, r.AccountID, w})
}

// MarshalJSON implements json.Marshaler.
func (c ChatComplete) MarshalJSON() ([]byte, error) {
	type wire ChatComplete
	return marshal(wire(c))
}

// UnmarshalJSON decodes the payload strictly.
func (m *ChatMessage) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, m) }

// UnmarshalJSON decodes the payload strictly.
func (p *ChatPartial) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, p) }

// UnmarshalJSON decodes the payload strictly.
func (n *ChatNotification) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, n) }

// UnmarshalJSON decodes the payload strictly.
func (r *ChatRateLimit) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, r) }

// UnmarshalJSON decodes the payload strictly.
func (c *ChatComplete) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, c) }

func decodeChatMessage(d *dec) ChatData {
	m := ChatMessage{}
	if raw := d.typed("message", "object", "a JSON object"); raw != nil {
		m.Message = decodeOutput(d.child("message", raw))
	}
	if !d.failed() {
		if err := checkPersisted(m.Message); err != nil {
			d.fail("message", err)
		}
	}
	m.MessageRowID = d.str("messageRowId")
	m.ParentMessageRowID = d.str("parentMessageRowId")
	m.SenderID = d.str("senderId")
	m.SenderName = d.str("senderName")
	m.Engine = readEnum[EngineType](d, "engine", false)
	m.Usage = decodeUsage(d, "usage")
	return m
}

func decodeChatPartial(d *dec) ChatData {
	p := ChatPartial{EventType: readEnum[PartialEventType](d, "eventType", true), Reasoning: d.boolean("reasoning")}
	if p.EventType == PartialUpdate {
		p.DeltaText = d.str("deltaText")
	}
	return p
}

func decodeChatNotification(d *dec) ChatData {
	n := d.obj("notification")
	return ChatNotification{
		Level:   readEnum[NotificationLevel](n, "type", true),
		Title:   n.str("title"),
		Message: n.str("message"),
	}
}

func decodeChatRateLimit(d *dec) ChatData {
	return ChatRateLimit{
		Engine:        readEnum[EngineType](d, "engine", false),
		AccountID:     d.str("accountId"),
		Status:        readEnum[RateLimitStatus](d, "status", true),
		Utilization:   d.float("utilization"),
		ResetsAt:      d.int64("resetsAt"),
		RateLimitType: readEnum[RateLimitType](d, "rateLimitType", false),
	}
}

func decodeChatComplete(d *dec) ChatData {
	return ChatComplete{
		StopReason:   d.str("stopReason"),
		Usage:        decodeUsage(d, "usage"),
		TotalCostUSD: d.float("totalCostUsd"),
		NumTurns:     d.int("numTurns"),
	}
}
