package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ChatEvent is what a client receives over the WebSocket and what travels on
// chat.<tenant>.<session> (the CHAT stream, the clients' resume buffer):
// {"type","chatSessionId","projectId","runId","source","timestamp","data"},
// with projectId, runId and source omitted when empty. Data is the union
// member named by Type.
type ChatEvent struct {
	Type          ChatEventType
	ChatSessionID string
	ProjectID     string
	RunID         string
	// Source is the engine event this chat event was routed from; nil for
	// chat events that no engine event caused (messages-changed after an
	// edit, stream-finished from the reaper).
	Source    *SourceRef
	Timestamp time.Time // RFC 3339 UTC on the wire
	Data      ChatData
}

// SourceRef identifies an engine event: {"run","epoch","seq"}, as its
// Envelope does.
type SourceRef struct {
	Run   string `json:"run"`
	Epoch uint64 `json:"epoch"`
	Seq   uint64 `json:"seq"`
}

// ChatEventType is the "type" of a chat event. The set is append-only; an
// unknown type decodes to ChatUnknown data.
type ChatEventType string

// The chat event types.
const (
	ChatTypeMessage         ChatEventType = "chat:message"
	ChatTypePartial         ChatEventType = "chat:partial"
	ChatTypeNotification    ChatEventType = "chat:notification"
	ChatTypeRateLimit       ChatEventType = "chat:rate_limit"
	ChatTypeComplete        ChatEventType = "chat:complete"
	ChatTypeError           ChatEventType = "chat:error"
	ChatTypeCancelled       ChatEventType = "chat:cancelled"
	ChatTypeStreamFinished  ChatEventType = "chat:stream-finished"
	ChatTypeWaitingInput    ChatEventType = "chat:waiting-input"
	ChatTypeRunState        ChatEventType = "chat:run-state" // Clopen's extension
	ChatTypeMessagesChanged ChatEventType = "chat:messages-changed"
)

// ChatData is the payload of a chat event. The concrete types are
// ChatMessage, ChatPartial, ChatNotification, ChatRateLimit, ChatComplete,
// ChatError, ChatCancelled, ChatStreamFinished, ChatWaitingInput,
// ChatRunState, ChatMessagesChanged and, for an unknown type, ChatUnknown;
// the unexported method keeps the set closed to this package.
type ChatData interface {
	json.Marshaler
	// ChatType returns the chat event type this payload belongs to.
	ChatType() ChatEventType
	isChatData()
}

// chatDecoders is the one registry of the ChatData union.
var chatDecoders = map[ChatEventType]func(*dec) ChatData{
	ChatTypeMessage:         decodeChatMessage,
	ChatTypePartial:         decodeChatPartial,
	ChatTypeNotification:    decodeChatNotification,
	ChatTypeRateLimit:       decodeChatRateLimit,
	ChatTypeComplete:        decodeChatComplete,
	ChatTypeError:           decodeChatError,
	ChatTypeCancelled:       decodeChatCancelled,
	ChatTypeStreamFinished:  decodeChatStreamFinished,
	ChatTypeWaitingInput:    decodeChatWaitingInput,
	ChatTypeRunState:        decodeChatRunState,
	ChatTypeMessagesChanged: decodeChatMessagesChanged,
}

// MsgID returns "<run>:<epoch>:<seq>:<n>", the Nats-Msg-Id to publish the
// event under on CHAT, or "" when Source is nil. One engine event can be
// routed into several chat events (an assistant message that asks a question
// yields chat:message and chat:waiting-input); n is the event's index among
// them, assigned in routing order, so routing the same engine event again
// (after a redelivery) yields the same ids and JetStream drops the repeats.
func (ev ChatEvent) MsgID(n int) string {
	if ev.Source == nil {
		return ""
	}
	s := ev.Source
	return s.Run + ":" + strconv.FormatUint(s.Epoch, 10) + ":" + strconv.FormatUint(s.Seq, 10) + ":" + strconv.Itoa(n)
}

// Validate reports whether the event can be published: it has a Type and
// Data of that type, ChatSessionID is a valid subject token, and a Source,
// if any, has a valid run token and a non-zero seq.
func (ev ChatEvent) Validate() error {
	if err := ev.checkData(); err != nil {
		return fmt.Errorf("validate chat event: %w", err)
	}
	if err := ValidToken(ev.ChatSessionID); err != nil {
		return fmt.Errorf("validate chat event: chatSessionId: %w", err)
	}
	if s := ev.Source; s != nil {
		if err := ValidToken(s.Run); err != nil {
			return fmt.Errorf("validate chat event: source.run: %w", err)
		}
		if s.Seq == 0 {
			return errors.New("validate chat event: source.seq: zero")
		}
	}
	return nil
}

func (ev ChatEvent) checkData() error {
	switch {
	case ev.Type == "":
		return errors.New("type: missing")
	case isNil(ev.Data):
		return errors.New("data: missing")
	case ev.Data.ChatType() != ev.Type:
		return fmt.Errorf("data: a %s payload in a %s event", ev.Data.ChatType(), ev.Type)
	}
	return nil
}

// MarshalJSON implements json.Marshaler. It refuses an event whose Data does
// not match its Type.
func (ev ChatEvent) MarshalJSON() ([]byte, error) {
	if err := ev.checkData(); err != nil {
		return nil, encodeErr(string(ev.Type), err)
	}
	data, err := ev.Data.MarshalJSON()
	if err != nil {
		return nil, encodeErr(string(ev.Type), fmt.Errorf("data: %w", err))
	}
	ts, err := wireTime("timestamp", ev.Timestamp)
	if err != nil {
		return nil, encodeErr(string(ev.Type), err)
	}
	// Built by hand: every routed event is encoded here, and encoding/json
	// would validate and re-compact the already encoded data.
	b := make([]byte, 0, len(data)+256)
	b = append(b, '{')
	b = appendField(b, true, "type", string(ev.Type))
	b = appendField(b, false, "chatSessionId", ev.ChatSessionID)
	if ev.ProjectID != "" {
		b = appendField(b, false, "projectId", ev.ProjectID)
	}
	if ev.RunID != "" {
		b = appendField(b, false, "runId", ev.RunID)
	}
	if s := ev.Source; s != nil {
		b = append(b, `,"source":{`...)
		b = appendField(b, true, "run", s.Run)
		b = append(b, `,"epoch":`...)
		b = strconv.AppendUint(b, s.Epoch, 10)
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, s.Seq, 10)
		b = append(b, '}')
	}
	b = appendField(b, false, "timestamp", ts)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	return append(b, '}'), nil
}

// UnmarshalJSON decodes strictly, as DecodeChatEvent does.
func (ev *ChatEvent) UnmarshalJSON(data []byte) error {
	v, err := DecodeChatEvent(data)
	if err == nil {
		*ev = v
	}
	return err
}

// DecodeChatEvent decodes a chat event under the rules of DecodeOutput: known
// types strictly, unknown fields ignored, every refusal a *DecodeError. An
// unknown type keeps its data as ChatUnknown, so an event this version does
// not know encodes back to the same bytes when it arrived in canonical form
// (fields in the order above, as every version of this package writes them).
func DecodeChatEvent(data []byte) (ChatEvent, error) {
	var err error
	d := openObject(data, "", &err)
	ev := ChatEvent{
		Type:          ChatEventType(d.reqStr("type")),
		ChatSessionID: d.str("chatSessionId"),
		ProjectID:     d.str("projectId"),
		RunID:         d.str("runId"),
		Timestamp:     d.time("timestamp"),
	}
	if s, ok := d.optObj("source"); ok {
		ev.Source = &SourceRef{Run: s.str("run"), Epoch: s.uint64("epoch"), Seq: s.uint64("seq")}
	}
	if raw := d.typed("data", "object", "a JSON object"); raw != nil {
		if fn, ok := chatDecoders[ev.Type]; ok {
			ev.Data = fn(d.child("data", raw))
		} else {
			ev.Data = ChatUnknown{Type: ev.Type, Raw: compact(raw)}
		}
	} else if !d.failed() {
		d.failf("data", "missing")
	}
	if err != nil {
		return ChatEvent{}, withType(err, peekType(data, "type", "chat event"))
	}
	return ev, nil
}

// unmarshalChatData is the UnmarshalJSON of every typed ChatData: it decodes
// a bare payload as the data of an event of T's type.
func unmarshalChatData[T ChatData](data []byte, dst *T) error {
	typ := (*dst).ChatType()
	var err error
	v := chatDecoders[typ](openObject(data, "", &err))
	if err != nil {
		return withType(err, string(typ))
	}
	*dst = v.(T)
	return nil
}
