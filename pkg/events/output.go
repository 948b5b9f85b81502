package events

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Output is one thing an engine emits: the EngineOutput union of the
// original, plus RunState and RunUsage. The concrete types are the persisted
// messages (UserMessage, AssistantMessage, ReasoningMessage,
// CompactBoundary), the transient events (StreamEvent, Result, SystemInit,
// RateLimit, Notification), RunState, RunUsage, and Unknown for a "type"
// this version does not know. The unexported method keeps the set closed to this package.
//
// Decoders return the values, never pointers: switch on AssistantMessage,
// not *AssistantMessage. MarshalJSON emits the "type" discriminator, so
// json.Marshal and EncodeOutput agree except that EncodeOutput does not
// escape <, > and & (see EncodeOutput).
type Output interface {
	json.Marshaler
	// OutputType returns the wire discriminator, e.g. "assistant".
	OutputType() string
	// sessionID returns the SDK session id the output carries, if any.
	sessionID() string
}

// The Output discriminators.
const (
	TypeUser            = "user"
	TypeAssistant       = "assistant"
	TypeReasoning       = "reasoning"
	TypeCompactBoundary = "compact_boundary"
	TypeStreamEvent     = "stream_event"
	TypeResult          = "result"
	TypeSystemInit      = "system_init"
	TypeRateLimit       = "rate_limit"
	TypeNotification    = "notification"
	TypeRunState        = "run_state" // Clopen's extension of the original union
)

// outputDecoders is the one registry of the Output union: discriminator to
// decoder. A decoder reads only the fields of its type.
var outputDecoders = map[string]func(*dec) Output{
	TypeUser:            decodeUser,
	TypeAssistant:       decodeAssistant,
	TypeReasoning:       decodeReasoning,
	TypeCompactBoundary: decodeCompactBoundary,
	TypeStreamEvent:     decodeStreamEvent,
	TypeResult:          decodeResult,
	TypeSystemInit:      decodeSystemInit,
	TypeRateLimit:       decodeRateLimit,
	TypeNotification:    decodeNotification,
	TypeRunState:        decodeRunState,
	TypeUsage:           decodeRunUsage,
}

// DecodeOutput decodes one engine output.
//
// A known "type" decodes strictly into its typed value; fields it does not
// know are ignored, so an older reader accepts what a newer writer adds (the
// contract is append-only). An unknown "type" decodes to Unknown and encodes
// back to the same bytes, compacted. Malformed JSON, a missing "type", a field
// of the wrong JSON type or an enum value outside its vocabulary is a
// *DecodeError naming the field. DecodeOutput never panics.
func DecodeOutput(data []byte) (Output, error) {
	var err error
	o := decodeOutput(openObject(data, "", &err))
	if err != nil {
		return nil, withType(err, peekType(data, "type", "output"))
	}
	return o, nil
}

// EncodeOutput encodes o in the canonical form: compact, fields in a fixed
// order, no HTML escaping, and only the fields of o's type. An Unknown
// encodes to exactly its Raw bytes. EncodeOutput refuses what DecodeOutput
// would refuse (an invalid enum value, a tool input that is not an object), so
// whatever it returns decodes again.
func EncodeOutput(o Output) ([]byte, error) {
	if isNil(o) {
		return nil, errors.New("encode output: nil")
	}
	return o.MarshalJSON()
}

func decodeOutput(d *dec) Output {
	typ := d.reqStr("type")
	if d.failed() {
		return nil
	}
	fn, ok := outputDecoders[typ]
	if !ok {
		return Unknown{Type: typ, Raw: compact(d.raw)}
	}
	o := fn(d)
	if d.failed() {
		return nil
	}
	return o
}

// IsPersisted reports whether o is one of the message types that are saved
// as chat messages: user, assistant, reasoning and compact_boundary. The
// others are transient.
func IsPersisted(o Output) bool {
	if isNil(o) {
		return false
	}
	switch o.OutputType() {
	case TypeUser, TypeAssistant, TypeReasoning, TypeCompactBoundary:
		_, unknown := o.(Unknown)
		return !unknown
	}
	return false
}

// SessionIDOf returns the SDK session id o carries, or "" when it has none
// (RunState, a frontend user message). For an Unknown it is the top-level
// "sessionId" string of Raw, if there is one.
func SessionIDOf(o Output) string {
	if isNil(o) {
		return ""
	}
	return o.sessionID()
}

// Unknown is an output whose "type" this version does not know. Raw holds the
// whole output, compacted; it encodes back to exactly those bytes.
type Unknown struct {
	Type string
	Raw  json.RawMessage
}

// OutputType implements Output.
func (u Unknown) OutputType() string { return u.Type }

func (u Unknown) sessionID() string { return peekType(u.Raw, "sessionId", "") }

// MarshalJSON implements json.Marshaler: Raw as it is, or {"type":Type} when
// Raw is empty.
func (u Unknown) MarshalJSON() ([]byte, error) { return marshalRaw("output", u.Type, u.Raw) }

// UnmarshalJSON keeps any JSON object that has a string "type", compacted.
func (u *Unknown) UnmarshalJSON(data []byte) error {
	typ, raw, err := unmarshalRaw(data, "output")
	if err == nil {
		*u = Unknown{Type: typ, Raw: raw}
	}
	return err
}

// marshalRaw encodes the opaque member of a union.
func marshalRaw(what, typ string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		if typ == "" {
			return nil, fmt.Errorf("encode %s: type: missing", what)
		}
		return marshal(struct {
			Type string `json:"type"`
		}{typ})
	}
	var err error
	d := openObject(raw, "", &err)
	if got := d.reqStr("type"); err == nil && got != typ {
		return nil, fmt.Errorf("encode %s: type %q does not match Raw's %q", what, typ, got)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s: Raw: %w", what, withType(err, what))
	}
	return compact(raw), nil
}

// unmarshalRaw decodes the opaque member of a union.
func unmarshalRaw(data []byte, what string) (string, json.RawMessage, error) {
	var err error
	d := openObject(data, "", &err)
	typ := d.reqStr("type")
	if err != nil {
		return "", nil, withType(err, what)
	}
	return typ, compact(data), nil
}

// unmarshalOutput is the UnmarshalJSON of every typed Output.
func unmarshalOutput[T Output](data []byte, dst *T) error {
	o, err := DecodeOutput(data)
	if err != nil {
		return err
	}
	v, ok := o.(T)
	if !ok {
		return &DecodeError{Type: o.OutputType(), Err: fmt.Errorf("want type %q", (*dst).OutputType())}
	}
	*dst = v
	return nil
}
