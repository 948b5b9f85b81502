package api

import (
	"encoding/json"

	"clopen.dev/pkg/events"
)

// CreateSession creates a chat session in a project; empty fields take the
// project's or the engine's defaults.
type CreateSession struct {
	Title     string            `json:"title,omitempty"`
	Engine    events.EngineType `json:"engine,omitempty"`
	Model     string            `json:"model,omitempty"`
	Effort    string            `json:"reasoningEffort,omitempty"`
	ProfileID string            `json:"profileId,omitempty"`
}

// UpdateSession changes a session's title or engine selection; nil leaves a
// field alone.
type UpdateSession struct {
	Title     *string            `json:"title,omitempty"`
	Engine    *events.EngineType `json:"engine,omitempty"`
	Model     *string            `json:"model,omitempty"`
	Effort    *string            `json:"reasoningEffort,omitempty"`
	ProfileID *string            `json:"profileId,omitempty"`
}

// Sessions lists a project's chat sessions, newest first.
type Sessions struct {
	Sessions []events.Session `json:"sessions"`
}

// Messages is one page of a session's saved messages, in saved order.
// NextAfterRowID, when set, is the afterRowId of the next page.
type Messages struct {
	Messages       []events.MessageRow `json:"messages"`
	NextAfterRowID string              `json:"nextAfterRowId,omitempty"`
}

// SendMessage starts a turn: Text is shorthand for a prompt of one text
// block; Prompt holds content blocks (text, image, document). Exactly one of
// them is given. Empty engine fields keep the session's choice.
type SendMessage struct {
	Text            string            `json:"text,omitempty"`
	Prompt          []json.RawMessage `json:"prompt,omitempty"`
	Engine          events.EngineType `json:"engine,omitempty"`
	Model           string            `json:"model,omitempty"`
	Effort          string            `json:"reasoningEffort,omitempty"`
	ProfileID       *string           `json:"profileId,omitempty"`
	ClientRequestID string            `json:"clientRequestId,omitempty"`
	// ParentMessageID forks the session: the turn continues from that
	// earlier message (its conversation and the files its turn left)
	// instead of from HEAD.
	ParentMessageID string `json:"parentMessageId,omitempty" doc:"Fork from an earlier message of the session: the turn continues from it (its conversation, and the files as its turn left them) instead of from HEAD. Only while no turn runs."`
}

// Checkpoints lists the turns on a session's HEAD, oldest first.
type Checkpoints struct {
	Checkpoints []events.Checkpoint `json:"checkpoints"`
}

// Restore names the message a session's HEAD goes back to.
type Restore struct {
	MessageID string `json:"messageId" doc:"A message of the session, such as a checkpoint's messageId."`
}

// Runs lists a session's runs, oldest first.
type Runs struct {
	Runs []events.Run `json:"runs"`
}

// RunControl names the run to cancel or interrupt; empty means the
// session's active run.
type RunControl struct {
	RunID string `json:"runId,omitempty"`
}

// Answer answers a parked AskUserQuestion (Answers: question text to the
// chosen label) or permission prompt (Decision: allow | deny, with an
// optional Message for the model).
type Answer struct {
	RunID     string            `json:"runId,omitempty"`
	ToolUseID string            `json:"toolUseId"`
	Answers   map[string]string `json:"answers,omitempty"`
	Decision  string            `json:"decision,omitempty"`
	Message   string            `json:"message,omitempty"`
}

// RunEvents is one page of a run's stored engine events, in order.
type RunEvents struct {
	Events []events.StoredEvent `json:"events"`
}

// AppliedSession is what applying a session to its project's base did.
type AppliedSession struct {
	BaseSnapshot string              `json:"baseSnapshot,omitempty" doc:"The project's base after the apply; absent while the project has no files."`
	Changes      []events.FileChange `json:"changes" doc:"What the apply changed in the base, with line counts; empty when the session changed nothing the base lacks."`
}
