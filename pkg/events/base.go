package events

import (
	"time"
)

// MessageBase is what every persisted message carries (user, assistant,
// reasoning, compact_boundary):
// {"createdAt","messageId","sessionId","parent","engine"}.
type MessageBase struct {
	// CreatedAt is when the adapter made the message (Workflow transcript
	// records keep their original time). It travels as RFC 3339 with
	// nanoseconds in UTC.
	CreatedAt time.Time
	// MessageID is the SDK's id when it has one, else a random UUID; a split
	// SDK message uses "<base>:<idx>".
	MessageID string
	// SessionID is the SDK session that produced the message; "" is null on
	// the wire (frontend user messages, partial-cancel saves) and is never a
	// resume target.
	SessionID string
	// Parent links a sub-agent's message to the dispatch tool call; it is
	// always encoded, with null for each empty field.
	Parent Parent
	Engine MessageEngine
}

func (b MessageBase) sessionID() string { return b.SessionID }

// Parent links a message to its parent. ToolUseID is set exactly when the
// message is a child of an Agent, Task or Workflow tool call; a tool-result
// carrier leaves it empty. Each empty field is null on the wire:
// {"messageId","sessionId","toolUseId"}.
type Parent struct {
	MessageID string `json:"messageId"`
	SessionID string `json:"sessionId"`
	ToolUseID string `json:"toolUseId"`
}

// MarshalJSON implements json.Marshaler, encoding "" as null.
func (p Parent) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		MessageID *string `json:"messageId"`
		SessionID *string `json:"sessionId"`
		ToolUseID *string `json:"toolUseId"`
	}{nullable(p.MessageID), nullable(p.SessionID), nullable(p.ToolUseID)})
}

// Sender is who sent a user message: {"id","name"}.
type Sender struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// baseWire is the leading part of every persisted message on the wire.
type baseWire struct {
	Type      string        `json:"type"`
	CreatedAt string        `json:"createdAt"`
	MessageID string        `json:"messageId"`
	SessionID *string       `json:"sessionId"`
	Parent    Parent        `json:"parent"`
	Engine    MessageEngine `json:"engine"`
}

func (b MessageBase) wire(typ string) (baseWire, error) {
	t, err := wireTime("createdAt", b.CreatedAt)
	if err == nil {
		err = checkEnum("engine.type", b.Engine.Type, false)
	}
	return baseWire{
		Type:      typ,
		CreatedAt: t,
		MessageID: b.MessageID,
		SessionID: nullable(b.SessionID),
		Parent:    b.Parent,
		Engine:    b.Engine,
	}, err
}

func decodeBase(d *dec) MessageBase {
	p := d.obj("parent")
	return MessageBase{
		CreatedAt: d.time("createdAt"),
		MessageID: d.str("messageId"),
		SessionID: d.str("sessionId"),
		Parent: Parent{
			MessageID: p.str("messageId"),
			SessionID: p.str("sessionId"),
			ToolUseID: p.str("toolUseId"),
		},
		Engine: decodeMessageEngine(d.obj("engine")),
	}
}
