package api

import "clopen.dev/pkg/events"

// Engines lists every engine type with its readiness.
type Engines struct {
	Engines []EngineReadiness `json:"engines"`
}

// EngineReadiness says whether any engine worker offers an engine now:
// Ready when at least one live worker does; Versions are the versions they
// run. Message, on an engine that is not ready, says what an operator does
// about it.
type EngineReadiness struct {
	Engine   events.EngineType `json:"engine"`
	Ready    bool              `json:"ready"`
	Workers  int               `json:"workers"`
	Versions []string          `json:"versions"`
	Message  string            `json:"message,omitempty"`
	// State, on an engine that is not ready, is what a live worker found
	// when it checked it (not-installed, not-responding, needs-update,
	// needs-account); empty when no worker reports it.
	State string `json:"state,omitempty" doc:"Why the engine is not ready, as a live worker found it: not-installed, not-responding, needs-update or needs-account (the message says what to do); absent when no live worker reports on it."`
}

// Generate picks the engine a generator runs on; model, provider and
// account are preferences the engine's catalog has the last word on.
type Generate struct {
	Engine    events.EngineType `json:"engine"`
	Model     string            `json:"model,omitempty"`
	Provider  string            `json:"provider,omitempty"`
	AccountID string            `json:"accountId,omitempty"`
	// Instructions add to a git generator's prompt ("mention the ticket").
	Instructions string `json:"instructions,omitempty"`
	// SessionID names the chat session of the project whose changes (its
	// workspace at HEAD against the base it started from) are described.
	SessionID string `json:"sessionId" doc:"The project's chat session whose changes to describe: its workspace at HEAD against the base it started from."`
}

// GenerateDraft asks for an artifact draft from its purpose.
type GenerateDraft struct {
	Engine    events.EngineType `json:"engine"`
	Model     string            `json:"model,omitempty"`
	Provider  string            `json:"provider,omitempty"`
	AccountID string            `json:"accountId,omitempty"`
	Purpose   string            `json:"purpose"`
}

// Generated names the model, provider and account a generation ran on.
type Generated struct {
	Model     string `json:"model"`
	Provider  string `json:"provider,omitempty"`
	AccountID string `json:"accountId,omitempty"`
}

// CommitMessage is a generated commit message for a project's changes.
type CommitMessage struct {
	Message string `json:"message"`
	Generated
}

// BranchName is a generated git branch name, always a valid ref.
type BranchName struct {
	Name string `json:"name"`
	Generated
}

// Draft is a generated artifact, not saved: the fields its create route
// takes (skills and subagents: slug, name, description, body;
// instructions: content).
type Draft struct {
	Kind        string `json:"kind"` // skill | subagent | instruction
	Slug        string `json:"slug,omitempty"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Body        string `json:"body,omitempty"`
	Content     string `json:"content,omitempty"`
	Generated
}
