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
	Snapshot string `json:"snapshot,omitempty"`
	// PreferWorker is the worker whose turn left Snapshot, and so likely
	// holds a copy of it: for a moment other workers leave the job to it,
	// if it is alive with a slot free (a preference, never a requirement).
	PreferWorker string    `json:"preferWorker,omitempty"`
	RequestedBy  string    `json:"requestedBy,omitempty"`
	QueuedAt     time.Time `json:"queuedAt"`
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
	// For cancel: Reason is StopBudget when streammgr stops the run because
	// its tenant's budget is spent (empty: the user cancelled it), and Error
	// the message the run then fails with.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// StopBudget is the Reason of a cancel (or of its RunFlag) that stops a run
// because its tenant's budget is spent: the run ends failed with
// KindBudgetExhausted and the request's Error, not cancelled.
const StopBudget = "budget"

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

// RunToolRequest is a request of the MCP bridge, on ctl.run.<run>.ask or
// .notify, for a tool an agent called; Tenant and RunID come from the
// agent's verified token, and the worker serves only a run it owns of that
// tenant.
type RunToolRequest struct {
	Tenant string `json:"tenant"`
	RunID  string `json:"runId"`
	// ask: the questions, as AskUserQuestion asks them.
	Questions []Question `json:"questions,omitempty"`
	// notify: what the session's members are told.
	Level   NotificationLevel `json:"level,omitempty"`
	Title   string            `json:"title,omitempty"`
	Message string            `json:"message,omitempty"`
}

// RunToolReply answers a RunToolRequest: the user's answers to an ask, or
// why it was refused.
type RunToolReply struct {
	Answers map[string]string `json:"answers,omitempty"`
	Error   string            `json:"error,omitempty"`
}

// WorkerInfo is a worker's heartbeat in the workers bucket.
type WorkerInfo struct {
	ID        string         `json:"id"`
	Engines   []EngineStatus `json:"engines"`
	Capacity  int            `json:"capacity"`
	Load      int            `json:"load"`
	StartedAt time.Time      `json:"startedAt"`
	BeatAt    time.Time      `json:"beatAt"`
	// Unready are the engines the worker has a profile for but does not
	// offer, each with why and what would make it ready.
	Unready []EngineProblem `json:"unready,omitempty"`
}

// EngineProblem is why a worker does not offer an engine: its state
// (not-installed, not-responding, needs-update, needs-account) and the
// fix, as clopen engines doctor words them.
type EngineProblem struct {
	Engine EngineType `json:"engine"`
	State  string     `json:"state"`
	Fix    string     `json:"fix"`
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
	// Reason and Error, on a cancel, are the ControlRequest's: why the run
	// is stopped when not by its user, and the message it fails with.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
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
