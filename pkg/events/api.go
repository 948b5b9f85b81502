package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// This file holds the request and reply bodies of the services' svc.<svc>.<op>
// endpoints. Every request embeds a Caller, which the serving side replaces
// with the claims of the request's verified token (svc.TokenHeader) before a
// handler runs; services scope every query by Caller.TenantID and never
// trust a tenant from anywhere else.

// Caller is who a service request is made for.
type Caller struct {
	TenantID string `json:"tenantId"`
	UserID   string `json:"userId"`
	UserName string `json:"userName,omitempty"`
	Role     string `json:"role,omitempty"` // admin | member
}

// Streammgr endpoints, under svc.streammgr.<op>.
const (
	OpStart         = "start"
	OpCancel        = "cancel"
	OpInterrupt     = "interrupt"
	OpAnswer        = "answer"
	OpSessionCreate = "sessions.create"
	OpSessionGet    = "sessions.get"
	OpSessionList   = "sessions.list"
	OpSessionUpdate = "sessions.update"
	OpSessionDelete = "sessions.delete"
	// OpCheckpoints lists the turns on a session's HEAD with their
	// snapshots; OpSessionRestore moves HEAD to an earlier message.
	OpCheckpoints    = "sessions.checkpoints"
	OpSessionRestore = "sessions.restore"
	OpMessagesList   = "messages.list"
	OpRunsList       = "runs.list"
	OpRunGet         = "runs.get"
	OpRunEvents      = "runs.events"
	OpRunRetry       = "runs.retry"
	OpSnapshot       = "snapshot"
	OpRebuildSession = "sessions.rebuild"
	OpUsage          = "usage"
)

// UsageRequest asks for the usage of a tenant's recorded runs queued in
// [From, To), summed per group. GroupBy names the dimensions (UsageGroups);
// none sums everything into one row. ProjectID and OnlyUser narrow it.
type UsageRequest struct {
	Caller
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	GroupBy   []string  `json:"groupBy,omitempty"`
	ProjectID string    `json:"projectId,omitempty"`
	OnlyUser  string    `json:"onlyUser,omitempty"`
}

// UsageGroups are the dimensions usage can be grouped by.
var UsageGroups = []string{"project", "user", "engine", "model"}

// UsageRow is one group's sums. The dimension fields not grouped by are
// empty. RunSeconds is the time runs took from their claim by a worker to
// their end; a run still going counts from the claim to now.
type UsageRow struct {
	ProjectID                string  `json:"projectId,omitempty"`
	UserID                   string  `json:"userId,omitempty"`
	Engine                   string  `json:"engine,omitempty"`
	Model                    string  `json:"model,omitempty"`
	Runs                     int64   `json:"runs"`
	FailedRuns               int64   `json:"failedRuns"`
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUsd"`
	RunSeconds               float64 `json:"runSeconds"`
}

// UsageReply is the usage of a time range.
type UsageReply struct {
	From    time.Time  `json:"from"`
	To      time.Time  `json:"to"`
	GroupBy []string   `json:"groupBy"`
	Rows    []UsageRow `json:"rows"`
}

// APIError is the error body every service endpoint returns; Status follows
// HTTP so the gateway maps it once. A resource of another tenant is reported
// as not found, never as forbidden, so its existence does not leak.
type APIError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"` // invalid_request | not_found | conflict | unavailable | internal | too_large | tenant_queue_full | budget_exhausted
	Message string `json:"message"`
	// ClientRequestID is set when a send timed out: the id the turn, if it
	// started, carries (GET /v1/sessions/{id}/runs lists it), and that a
	// retry repeats to get that turn rather than a second one.
	ClientRequestID string `json:"clientRequestId,omitempty"`
	// RetryAfter, in seconds, says when a refusal for load (429) is worth
	// retrying; the gateway sends it as Retry-After.
	RetryAfter int `json:"retryAfter,omitempty"`
	// Budget is, on a 402 budget_exhausted, the budget that is spent: its
	// limit, what was spent in its period and when the period resets.
	Budget *BudgetState `json:"budget,omitempty"`
}

func (e *APIError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// StartTurnRequest asks streammgr to run one turn in a chat session.
type StartTurnRequest struct {
	Caller
	SessionID string `json:"sessionId"`
	Prompt    Blocks `json:"prompt"` // text, image, document blocks as the user typed them
	// Engine selection; empty fields keep the session's current choice.
	Engine    EngineType `json:"engine,omitempty"`
	Model     string     `json:"model,omitempty"`
	Provider  string     `json:"provider,omitempty"`
	AccountID string     `json:"accountId,omitempty"`
	Effort    string     `json:"reasoningEffort,omitempty"`
	ProfileID *string    `json:"profileId,omitempty"` // null = explicitly none
	// ClientRequestID makes a retried send idempotent: the same id in the same
	// session returns the first run instead of starting another. The gateway
	// gives a send without one an id of its own.
	ClientRequestID string `json:"clientRequestId,omitempty"`
	// ParentMessageID, when set, forks: HEAD moves to that message of the
	// session before the turn starts (refused while a turn runs).
	ParentMessageID string `json:"parentMessageId,omitempty"`
}

// StartTurnReply names the run. Queued is true when the session already had an
// active run: the prompt waits and starts when that run completes.
type StartTurnReply struct {
	RunID            string `json:"runId"`
	Queued           bool   `json:"queued"`
	UserMessageRowID string `json:"userMessageRowId,omitempty"` // empty while queued
	// QueuedReason says why a queued run waits when it is not behind its
	// session's active run: its tenant is at its limit of concurrent runs.
	QueuedReason string `json:"queuedReason,omitempty"`
	// ClientRequestID is the send's idempotency key: the client's, or the
	// one the gateway made up.
	ClientRequestID string `json:"clientRequestId,omitempty"`
}

// RunControl is the body of cancel and interrupt. RunID empty means the
// session's active run.
type RunControl struct {
	Caller
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId,omitempty"`
}

// AnswerRequest answers a parked AskUserQuestion (Answers) or permission
// prompt (Decision) of a session's active run.
type AnswerRequest struct {
	Caller
	SessionID string            `json:"sessionId"`
	RunID     string            `json:"runId,omitempty"`
	ToolUseID string            `json:"toolUseId"`
	Answers   map[string]string `json:"answers,omitempty"`
	Decision  string            `json:"decision,omitempty"`
	Message   string            `json:"message,omitempty"`
}

// Session is a chat session as clients see it.
type Session struct {
	ID              string     `json:"id"`
	ProjectID       string     `json:"projectId"`
	Title           string     `json:"title"`
	Engine          EngineType `json:"engine"`
	Provider        string     `json:"provider,omitempty"`
	Model           string     `json:"model,omitempty"`
	AccountID       string     `json:"accountId,omitempty"`
	Effort          string     `json:"reasoningEffort,omitempty"`
	ProfileID       string     `json:"profileId,omitempty"`
	HeadSessionID   string     `json:"headSessionId,omitempty"`
	HeadMessageID   string     `json:"headMessageId,omitempty"`
	HeadTitle       string     `json:"headTitle"`
	HeadSummary     string     `json:"headSummary"`
	MessageCount    int        `json:"messageCount"`
	UserCount       int        `json:"userCount"`
	LastMessageAt   *time.Time `json:"lastMessageAt,omitempty"`
	ActiveRunID     string     `json:"activeRunId,omitempty"`
	CreatedBy       string     `json:"createdBy,omitempty"`
	CreatedAt       time.Time  `json:"createdAt"`
	UpdatedAt       time.Time  `json:"updatedAt"`
	QueuedRunsCount int        `json:"queuedRuns"`
	// BaseSnapshot is the snapshot the session's first turn starts from:
	// the project's base when the session was created, "" for an empty one.
	BaseSnapshot string `json:"baseSnapshot,omitempty" doc:"The snapshot of the project's files the session started from; absent for a session that started empty."`
	// HeadSnapshot is the snapshot the next turn on HEAD starts from: the
	// files as the newest turn on the branch left them (BaseSnapshot when
	// none left any). Filled in by a get of one session, not by a list.
	HeadSnapshot string `json:"headSnapshot,omitempty" doc:"The snapshot of the session's files as HEAD's newest turn left them (the base when no turn left one); only on a get of one session."`
}

// SessionCreate creates a chat session in a project the caller belongs to
// (the gateway checks membership).
type SessionCreate struct {
	Caller
	ProjectID string     `json:"projectId"`
	Title     string     `json:"title,omitempty"`
	Engine    EngineType `json:"engine,omitempty"`
	Model     string     `json:"model,omitempty"`
	Effort    string     `json:"reasoningEffort,omitempty"`
	ProfileID string     `json:"profileId,omitempty"`
	// BaseSnapshot is the project's base the session starts from (the
	// gateway sets it from the project, never the client).
	BaseSnapshot string `json:"baseSnapshot,omitempty"`
}

// Checkpoint is one turn on a session's HEAD path: the files it left are
// addressable by its snapshot, and HEAD can be moved back to it.
type Checkpoint struct {
	RunID         string       `json:"runId"`
	UserMessageID string       `json:"userMessageId" doc:"The turn's prompt."`
	MessageID     string       `json:"messageId" doc:"The turn's last message on the branch: restore or fork from it to continue from the files as this turn left them."`
	State         RunStateName `json:"state"`
	Prompt        string       `json:"prompt" doc:"The start of the prompt's text."`
	CreatedAt     time.Time    `json:"createdAt"`
	Snapshot      *RunSnapshot `json:"snapshot" doc:"The files as the turn left them, and what it changed; null when it left no snapshot."`
}

// SessionRestore moves a session's HEAD to MessageID, one of its messages:
// the next turn continues from there, with the files as the turn that
// message belongs to left them.
type SessionRestore struct {
	Caller
	SessionID string `json:"sessionId"`
	MessageID string `json:"messageId"`
}

// SessionRef names one session (get, delete, snapshot, rebuild).
type SessionRef struct {
	Caller
	SessionID string `json:"sessionId"`
}

// SessionList lists a project's sessions, newest first. A non-empty Query
// keeps those whose title or head title contains it, ignoring case.
type SessionList struct {
	Caller
	ProjectID string `json:"projectId"`
	Query     string `json:"query,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// MaxSessionQuery bounds SessionList.Query, in bytes.
const MaxSessionQuery = 200

// SessionUpdate changes a session's title or engine selection; nil leaves a
// field alone.
type SessionUpdate struct {
	Caller
	SessionID string      `json:"sessionId"`
	Title     *string     `json:"title,omitempty"`
	Engine    *EngineType `json:"engine,omitempty"`
	Model     *string     `json:"model,omitempty"`
	Effort    *string     `json:"reasoningEffort,omitempty"`
	ProfileID *string     `json:"profileId,omitempty"`
}

// MessageRow is one saved message with its place in the session's DAG.
type MessageRow struct {
	RowID       string          `json:"rowId"`
	ParentRowID string          `json:"parentRowId,omitempty"`
	RunID       string          `json:"runId,omitempty"`
	Message     json.RawMessage `json:"message"` // the unified message (an Output)
	CreatedAt   time.Time       `json:"createdAt"`
}

// MessageList pages through a session's messages in saved order.
type MessageList struct {
	Caller
	SessionID string `json:"sessionId"`
	AfterRow  string `json:"afterRowId,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// Run is a run as clients see it.
type Run struct {
	ID              string       `json:"id"`
	SessionID       string       `json:"sessionId"`
	ProjectID       string       `json:"projectId"`
	State           RunStateName `json:"state"`
	Engine          EngineType   `json:"engine"`
	Model           string       `json:"model,omitempty"`
	Effort          string       `json:"reasoningEffort,omitempty"`
	WorkerID        string       `json:"workerId,omitempty"`
	Epoch           uint64       `json:"epoch"`
	EngineSessionID string       `json:"engineSessionId,omitempty"`
	Error           string       `json:"error,omitempty"`
	ErrorKind       string       `json:"errorKind,omitempty"`
	// Usage is what the agent reported in its result.
	Usage *TokenUsage `json:"usage,omitempty"`
	// MeteredUsage is what the model proxy counted from the provider's own
	// responses while the run ran (see RunState.MeteredUsage), so an agent
	// cannot under-report it; null when the run did not go through the
	// proxy (an unconfined worker, or a model server reached directly).
	MeteredUsage *TokenUsage `json:"meteredUsage" doc:"The tokens the model proxy counted from the provider's responses to this run, independent of the agent's own report (usage); null when the run did not go through the proxy (an unconfined worker, a model server the agent reached directly)."`
	// Snapshot is the state the run left (see RunSnapshot): null before
	// it ended, or when its worker took none.
	// StartSnapshot is the snapshot the turn started from ("" for a turn
	// that started from an empty workspace or has not been dispatched).
	StartSnapshot   string       `json:"startSnapshot,omitempty" doc:"The snapshot of the session's files the turn started from; absent when it started from an empty workspace."`
	Snapshot        *RunSnapshot `json:"snapshot" doc:"The state this turn left: the snapshot of the session's workspace and engine session after it, and the files it added, changed and deleted; null while the run goes on or when none was taken."`
	CostUSD         *float64     `json:"totalCostUsd,omitempty"`
	ClientRequestID string       `json:"clientRequestId,omitempty"` // of the send that started it
	// Prompt is the start of the text the user typed for the turn, so a
	// client can show a turn still waiting behind the active one.
	Prompt string `json:"prompt,omitempty" doc:"The start of the text of the turn's prompt, as the user typed it (before any skill was expanded)."`
	// RetryOf is the lost run this run retries (see OpRunRetry).
	RetryOf       string     `json:"retryOf,omitempty" doc:"The lost run this run is the retry of: it runs the lost turn's prompt again from the files the lost turn started from."`
	QueuedAt      time.Time  `json:"queuedAt"`
	DispatchedAt  *time.Time `json:"dispatchedAt,omitempty"`
	ClaimedAt     *time.Time `json:"claimedAt,omitempty"`
	FirstOutputAt *time.Time `json:"firstOutputAt,omitempty"`
	EndedAt       *time.Time `json:"endedAt,omitempty"`
	// ArtifactRevision is the artifacts revision the run was configured from.
	ArtifactRevision *int64 `json:"artifactRevision,omitempty"`
}

// RunList lists a session's runs, oldest first.
type RunList struct {
	Caller
	SessionID string `json:"sessionId"`
	Limit     int    `json:"limit,omitempty"`
}

// RunRef names one run.
type RunRef struct {
	Caller
	RunID string `json:"runId"`
}

// RunEvents pages through a run's stored events in order.
type RunEvents struct {
	Caller
	RunID      string `json:"runId"`
	AfterEpoch uint64 `json:"afterEpoch,omitempty"`
	AfterSeq   uint64 `json:"afterSeq,omitempty"`
	Limit      int    `json:"limit,omitempty"`
}

// StoredEvent is one event of a run's log.
type StoredEvent struct {
	Epoch     uint64          `json:"epoch"`
	Seq       uint64          `json:"seq"`
	Type      string          `json:"type"`
	Output    json.RawMessage `json:"output"`
	CreatedAt time.Time       `json:"createdAt"`
}

// Snapshot is the state of a session a (re)joining client starts from: the
// saved messages, the active run with its in-progress partial text, and the
// CHAT cursor after which live frames continue the snapshot exactly.
type Snapshot struct {
	Session          Session      `json:"session"`
	Messages         []MessageRow `json:"messages"`
	ActiveRun        *Run         `json:"activeRun,omitempty"`
	PartialText      string       `json:"partialText,omitempty"`
	PartialReasoning string       `json:"partialReasoning,omitempty"`
	Cursor           uint64       `json:"cursor"`
}
