package events

import "encoding/json"

// The WebSocket protocol of /v1/ws. Every frame is one JSON object. Clients
// send ClientFrames with an id of their choosing; the server answers each with
// a ServerFrame of type "reply" carrying the same id, and pushes "event",
// "snapshot" and "bye" frames on its own. Every event frame carries the CHAT
// cursor a reconnecting client sends back to resume without gap or duplicate.

// Client operations.
const (
	WSOpJoin      = "join"      // {session, cursor?}: leave any other session, start receiving this one
	WSOpLeave     = "leave"     // {session}
	WSOpSend      = "send"      // {session, prompt|text, engine?, model?, reasoningEffort?, profileId?, clientRequestId?}
	WSOpCancel    = "cancel"    // {session, run?}
	WSOpInterrupt = "interrupt" // {session, run?}
	WSOpAnswer    = "answer"    // {session, run?, toolUseId, answers|decision, message?}
	WSOpPing      = "ping"      // {}
	// WSOpSkillsAvailable lists the "/" picker: {session?|projectId?,
	// profileId?}; reply data is []AvailableSkill. A session stands for its
	// project and, unless profileId is given, its profile; neither means the
	// tenant's skills under profileId (or no profile).
	WSOpSkillsAvailable = "skills.available"
	// WSOpModelsList lists an engine's models: {engine, accountId?}; reply
	// data is a ModelsReply, as GET /v1/models.
	WSOpModelsList = "models.list"
)

// ClientFrame is what a client sends. Fields not used by Op are ignored.
type ClientFrame struct {
	ID        string            `json:"id,omitempty"`
	Op        string            `json:"op"`
	Session   string            `json:"session,omitempty"`
	ProjectID string            `json:"projectId,omitempty"` // skills.available
	Run       string            `json:"run,omitempty"`
	Cursor    *uint64           `json:"cursor,omitempty"`
	Text      string            `json:"text,omitempty"`   // shorthand for a one-text-block prompt
	Prompt    json.RawMessage   `json:"prompt,omitempty"` // content blocks
	Engine    EngineType        `json:"engine,omitempty"`
	AccountID string            `json:"accountId,omitempty"` // models.list
	Model     string            `json:"model,omitempty"`
	Effort    string            `json:"reasoningEffort,omitempty"`
	ProfileID *string           `json:"profileId,omitempty"`
	RequestID string            `json:"clientRequestId,omitempty"`
	ToolUseID string            `json:"toolUseId,omitempty"`
	Answers   map[string]string `json:"answers,omitempty"`
	Decision  string            `json:"decision,omitempty"`
	Message   string            `json:"message,omitempty"`
}

// Server frame types.
const (
	WSFrameReply    = "reply"
	WSFrameEvent    = "event"
	WSFrameSnapshot = "snapshot"
	WSFrameBye      = "bye"
)

// ServerFrame is what the server sends.
type ServerFrame struct {
	Type string `json:"type"`
	// reply
	ID    string          `json:"id,omitempty"`
	OK    *bool           `json:"ok,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error *APIError       `json:"error,omitempty"`
	// event, snapshot, bye
	Session string          `json:"session,omitempty"`
	Cursor  uint64          `json:"cursor,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"`    // a ChatEvent
	Reload  bool            `json:"reload,omitempty"`   // snapshot: the client's cursor was older than the buffer
	Payload *Snapshot       `json:"snapshot,omitempty"` // snapshot
	Reason  string          `json:"reason,omitempty"`   // bye
}
