package events

import (
	"encoding/json"
	"fmt"
)

// ChatError is the data of chat:error: {"error","errorKind"}, errorKind
// omitted when unclassified. The turn failed; Error is fit to show the user.
type ChatError struct {
	Error     string    `json:"error"`
	ErrorKind ErrorKind `json:"errorKind,omitempty"`
}

// ChatCancelled is the data of chat:cancelled, always {"status":"cancelled"}.
type ChatCancelled struct{}

// ChatStreamFinished is the data of chat:stream-finished, sent to every
// member of the project when a turn ends: {"projectId","chatSessionId",
// "status","reason"}, reason omitted when empty.
type ChatStreamFinished struct {
	ProjectID     string       `json:"projectId"`
	ChatSessionID string       `json:"chatSessionId"`
	Status        FinishStatus `json:"status"`
	Reason        string       `json:"reason,omitempty"` // e.g. "session-deleted"
	// Snapshot is the state the turn left and the files it changed (see
	// RunSnapshot), when its worker took a snapshot.
	Snapshot *RunSnapshot `json:"snapshot,omitempty"`
}

// FinishStatus is how a turn finished, as chat:stream-finished reports it.
type FinishStatus string

// The finish statuses.
const (
	FinishCompleted FinishStatus = "completed"
	FinishError     FinishStatus = "error"
	FinishCancelled FinishStatus = "cancelled"
	FinishLost      FinishStatus = "lost"
)

// Valid reports whether s is completed, error, cancelled or lost.
func (s FinishStatus) Valid() bool {
	return oneOf(s, []FinishStatus{FinishCompleted, FinishError, FinishCancelled, FinishLost})
}

// ChatWaitingInput is the data of chat:waiting-input, sent to every member of
// the project when an AskUserQuestion waits for an answer:
// {"projectId","chatSessionId","toolUseId"}.
type ChatWaitingInput struct {
	ProjectID     string `json:"projectId"`
	ChatSessionID string `json:"chatSessionId"`
	ToolUseID     string `json:"toolUseId"`
}

// ChatRunState is the data of chat:run-state, Clopen's extension: every
// transition of the run, so clients see cancelling and then cancelled.
// {"state","reason","error","toolUseId"}, the last three omitted when empty.
type ChatRunState struct {
	State     RunStateName `json:"state"`
	Reason    string       `json:"reason,omitempty"`
	Error     string       `json:"error,omitempty"`
	ToolUseID string       `json:"toolUseId,omitempty"` // awaiting_input: what to answer
}

// ChatMessagesChanged is the data of chat:messages-changed: the session's
// messages changed other than by appending (an edit, a rewind), so clients
// reload them. {"reason"}.
type ChatMessagesChanged struct {
	Reason string `json:"reason"`
}

// ChatUnknown is the data of a chat event whose type this version does not
// know. Raw holds the data object, compacted; it encodes back to exactly
// those bytes ({} when empty).
type ChatUnknown struct {
	Type ChatEventType
	Raw  json.RawMessage
}

// ChatType implements ChatData.
func (ChatError) ChatType() ChatEventType { return ChatTypeError }

// ChatType implements ChatData.
func (ChatCancelled) ChatType() ChatEventType { return ChatTypeCancelled }

// ChatType implements ChatData.
func (ChatStreamFinished) ChatType() ChatEventType { return ChatTypeStreamFinished }

// ChatType implements ChatData.
func (ChatWaitingInput) ChatType() ChatEventType { return ChatTypeWaitingInput }

// ChatType implements ChatData.
func (ChatRunState) ChatType() ChatEventType { return ChatTypeRunState }

// ChatType implements ChatData.
func (ChatMessagesChanged) ChatType() ChatEventType { return ChatTypeMessagesChanged }

// ChatType implements ChatData.
func (u ChatUnknown) ChatType() ChatEventType { return u.Type }

func (ChatError) isChatData()           {}
func (ChatCancelled) isChatData()       {}
func (ChatStreamFinished) isChatData()  {}
func (ChatWaitingInput) isChatData()    {}
func (ChatRunState) isChatData()        {}
func (ChatMessagesChanged) isChatData() {}
func (ChatUnknown) isChatData()         {}

// MarshalJSON implements json.Marshaler.
func (e ChatError) MarshalJSON() ([]byte, error) {
	if err := checkEnum("errorKind", e.ErrorKind, false); err != nil {
		return nil, encodeErr(string(ChatTypeError), err)
	}
	type wire ChatError
	return marshal(wire(e))
}

// MarshalJSON implements json.Marshaler.
func (ChatCancelled) MarshalJSON() ([]byte, error) { return []byte(`{"status":"cancelled"}`), nil }

// MarshalJSON implements json.Marshaler.
func (f ChatStreamFinished) MarshalJSON() ([]byte, error) {
	if err := checkEnum("status", f.Status, true); err != nil {
		return nil, encodeErr(string(ChatTypeStreamFinished), err)
	}
	type wire ChatStreamFinished
	return marshal(wire(f))
}

// MarshalJSON implements json.Marshaler.
func (w ChatWaitingInput) MarshalJSON() ([]byte, error) {
	type wire ChatWaitingInput
	return marshal(wire(w))
}

// MarshalJSON implements json.Marshaler.
func (r ChatRunState) MarshalJSON() ([]byte, error) {
	if err := checkEnum("state", r.State, true); err != nil {
		return nil, encodeErr(string(ChatTypeRunState), err)
	}
	type wire ChatRunState
	return marshal(wire(r))
}

// MarshalJSON implements json.Marshaler.
func (m ChatMessagesChanged) MarshalJSON() ([]byte, error) {
	type wire ChatMessagesChanged
	return marshal(wire(m))
}

// MarshalJSON implements json.Marshaler.
func (u ChatUnknown) MarshalJSON() ([]byte, error) {
	if len(u.Raw) == 0 {
		return []byte("{}"), nil
	}
	if err := checkObject("data", u.Raw); err != nil {
		return nil, encodeErr(string(u.Type), err)
	}
	return compact(u.Raw), nil
}

// UnmarshalJSON decodes the payload strictly.
func (e *ChatError) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, e) }

// UnmarshalJSON decodes the payload strictly.
func (c *ChatCancelled) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, c) }

// UnmarshalJSON decodes the payload strictly.
func (f *ChatStreamFinished) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, f) }

// UnmarshalJSON decodes the payload strictly.
func (w *ChatWaitingInput) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, w) }

// UnmarshalJSON decodes the payload strictly.
func (r *ChatRunState) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, r) }

// UnmarshalJSON decodes the payload strictly.
func (m *ChatMessagesChanged) UnmarshalJSON(data []byte) error { return unmarshalChatData(data, m) }

// UnmarshalJSON keeps any JSON object, compacted; Type is left as it was.
func (u *ChatUnknown) UnmarshalJSON(data []byte) error {
	var err error
	d := openObject(data, "", &err)
	if err != nil {
		return withType(err, string(u.Type))
	}
	u.Raw = compact(d.raw)
	return nil
}

func decodeChatError(d *dec) ChatData {
	return ChatError{Error: d.str("error"), ErrorKind: readEnum[ErrorKind](d, "errorKind", false)}
}

func decodeChatCancelled(d *dec) ChatData {
	if s := d.str("status"); s != "" && s != "cancelled" {
		d.fail("status", fmt.Errorf("invalid value %q", s))
	}
	return ChatCancelled{}
}

func decodeChatStreamFinished(d *dec) ChatData {
	return ChatStreamFinished{
		ProjectID:     d.str("projectId"),
		ChatSessionID: d.str("chatSessionId"),
		Status:        readEnum[FinishStatus](d, "status", true),
		Reason:        d.str("reason"),
	}
}

func decodeChatWaitingInput(d *dec) ChatData {
	return ChatWaitingInput{ProjectID: d.str("projectId"), ChatSessionID: d.str("chatSessionId"), ToolUseID: d.str("toolUseId")}
}

func decodeChatRunState(d *dec) ChatData {
	return ChatRunState{State: readEnum[RunStateName](d, "state", true), Reason: d.str("reason"), Error: d.str("error"), ToolUseID: d.str("toolUseId")}
}

func decodeChatMessagesChanged(d *dec) ChatData {
	return ChatMessagesChanged{Reason: d.str("reason")}
}
