package api

// Joined is the data of the reply to a WebSocket join: event frames of
// Session follow, the first with a cursor of at least From.
type Joined struct {
	Session string `json:"session"`
	From    uint64 `json:"from"`
}
