package events

// Notification tells the user something the transcript cannot explain (a
// prompt the engine did not accept, a fallback model, a credit limit):
// {"type":"notification","sessionId","level","title","message"}.
type Notification struct {
	SessionID string
	Level     NotificationLevel
	Title     string
	Message   string
}

// NotificationLevel is the severity of a notification.
type NotificationLevel string

// The notification levels.
const (
	LevelInfo    NotificationLevel = "info"
	LevelWarning NotificationLevel = "warning"
	LevelError   NotificationLevel = "error"
)

// Valid reports whether l is info, warning or error.
func (l NotificationLevel) Valid() bool {
	return l == LevelInfo || l == LevelWarning || l == LevelError
}

// OutputType implements Output.
func (Notification) OutputType() string { return TypeNotification }

func (n Notification) sessionID() string { return n.SessionID }

// MarshalJSON implements json.Marshaler.
func (n Notification) MarshalJSON() ([]byte, error) {
	if err := checkEnum("level", n.Level, true); err != nil {
		return nil, encodeErr(TypeNotification, err)
	}
	return marshal(struct {
		Type      string            `json:"type"`
		SessionID string            `json:"sessionId"`
		Level     NotificationLevel `json:"level"`
		Title     string            `json:"title"`
		Message   string            `json:"message"`
	}{TypeNotification, n.SessionID, n.Level, n.Title, n.Message})
}

// UnmarshalJSON decodes a notification strictly, as DecodeOutput does.
func (n *Notification) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, n) }

func decodeNotification(d *dec) Output {
	return Notification{
		SessionID: d.str("sessionId"),
		Level:     readEnum[NotificationLevel](d, "level", true),
		Title:     d.str("title"),
		Message:   d.str("message"),
	}
}
