package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// Job is one turn waiting for a worker, published by streammgr on
// job.<engine> with Nats-Msg-Id = RunID. It carries everything the worker
// needs; the worker never reads streammgr's database.
type Job struct {
	Tenant    string     `json:"tenant"`
	RunID     string     `json:"runId"`
	SessionID string     `json:"sessionId"` // the chat session
	ProjectID string     `json:"projectId"`
	Engine    EngineType `json:"engine"`
	Model     string     `json:"model,omitempty"`
	Provider  string     `json:"provider,omitempty"`
	AccountID string     `json:"accountId,omitempty"`
	Effort    string     `json:"reasoningEffort,omitempty"`
	ProfileID string     `json:"profileId,omitempty"`
	// Prompt is the ENGINE prompt: what the user typed after slash-skill
	// expansion and resume/handoff context. The saved user message keeps the
	// original text.
	Prompt Blocks `json:"prompt"`
	// ResumeSessionID is the engine session to continue (forked on resume), or
	// empty for a fresh session.
	ResumeSessionID string `json:"resumeSessionId,omitempty"`
	// Snapshot is the state the turn starts from: the snapshot left by the
	// newest turn on the session's HEAD (its workspace and its engine's
	// session files; see RunSnapshot), so the turn can run on any worker.
	// Empty for a session no turn has left state in yet: it starts from
	// an empty workspace.
	Snapshot    string    `json:"snapshot,omitempty"`
	RequestedBy string    `json:"requestedBy,omitempty"`
	QueuedAt    time.Time `json:"queuedAt"`
	// TraceParent is the W3C trace context of the request that started the
	// turn, so a turn dispatched later (queued behind another, or held at
	// its tenant's limit) still joins that request's trace.
	TraceParent string `json:"traceParent,omitempty"`
	// DispatchToken is streammgr's signed word that this run of Tenant, on
	// Engine with AccountID, was dispatched: the worker sends it (the
	// Clopen-Caller header) for the run's content and credential. It is
	// signed at each publish and never stored.
	DispatchToken string `json:"dispatchToken,omitempty"`
}

// Validate checks the fields a worker relies on.
func (j *Job) Validate() error {
	for name, v := range map[string]string{"tenant": j.Tenant, "runId": j.RunID, "sessionId": j.SessionID, "projectId": j.ProjectID} {
		if err := ValidToken(v); err != nil {
			return fmt.Errorf("job %s: %w", name, err)
		}
	}
	if _, err := ParseEngineType(string(j.Engine)); err != nil {
		return fmt.Errorf("job engine: %w", err)
	}
	if len(j.Prompt) == 0 {
		return fmt.Errorf("job %s: empty prompt", j.RunID)
	}
	return nil
}

// ControlRequest is the body of a ctl.run.<run>.<verb> request. The owning
// worker checks Tenant against the run it holds before acting.
type ControlRequest struct {
	Tenant      string `json:"tenant"`
	RunID       string `json:"runId"`
	RequestedBy string `json:"requestedBy,omitempty"`
	// For answer: the parked question or permission prompt being answered.
	ToolUseID string            `json:"toolUseId,omitempty"`
	Answers   map[string]string `json:"answers,omitempty"`  // AskUserQuestion: question text -> chosen label(s)
	Decision  string            `json:"decision,omitempty"` // permission: allow | deny
	Message   string            `json:"message,omitempty"`  // permission deny reason shown to the model
}

// Permission decisions for ControlRequest.Decision.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// ControlReply acknowledges a control request. Accepted false carries the
// reason (unknown tool use id, run already finished, wrong tenant).
type ControlReply struct {
	Accepted bool         `json:"accepted"`
	State    RunStateName `json:"state,omitempty"`
	Error    string       `json:"error,omitempty"`
}

// WorkerInfo is a worker's heartbeat in the workers bucket.
type WorkerInfo struct {
	ID        string         `json:"id"`
	Engines   []EngineStatus `json:"engines"`
	Capacity  int            `json:"capacity"`
	Load      int            `json:"load"`
	StartedAt time.Time      `json:"startedAt"`
	BeatAt    time.Time      `json:"beatAt"`
}

// EngineStatus is what a worker advertises about one engine.
type EngineStatus struct {
	Engine  EngineType `json:"engine"`
	Version string     `json:"version"`
}

// RunOwner is the value of a run_owner lease; the key is the run id and the
// KV revision is the epoch.
type RunOwner struct {
	Worker    string    `json:"worker"`
	Tenant    string    `json:"tenant"`
	ClaimedAt time.Time `json:"claimedAt"`
}

// RunFlag is a durable control flag in run_ctl for a run whose owner could not
// be reached: the next claimant, or the owner at its next renewal, obeys it.
type RunFlag struct {
	Verb string    `json:"verb"` // cancel | interrupt | abandon
	At   time.Time `json:"at"`
}

// VerbAbandon is the flag verb beyond the control verbs: it marks a run
// streammgr has already ended (lost or cancelled before any worker claimed
// it).
const VerbAbandon = "abandon"

// Blocks is a list of content blocks that decodes from JSON (a plain
// []Block cannot: it is a slice of interfaces). A prompt is Blocks.
type Blocks []Block

// UnmarshalJSON decodes each block with DecodeBlock; an error names the index.
func (bs *Blocks) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("blocks: want an array of blocks: %w", err)
	}
	out := make(Blocks, len(raw))
	for i, r := range raw {
		b, err := DecodeBlock(r)
		if err != nil {
			return fmt.Errorf("blocks[%d]: %w", i, err)
		}
		out[i] = b
	}
	*bs = out
	return nil
}
