package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
)

// RunRow is a run as streammgr keeps it.
type RunRow struct {
	ID, Tenant, SessionID, ProjectID string
	State                            events.RunStateName
	Engine                           events.EngineType
	Model, Effort, Profile           string
	RequestedBy, SenderName          string
	ClientRequestID                  string
	ResumeSessionID, EngineSession   string
	WorkerID                         string
	Epoch, LastSeq                   uint64
	Job                              events.Job
	UserMessageID                    string
	RetryOf                          string // the lost run this one retries
	QueuedAt                         time.Time
	DispatchedAt, ClaimedAt, EndedAt *time.Time
}

const runColumns = `id::text, tenant_id::text, session_id::text, project_id::text, state, engine, model,
	coalesce(reasoning_effort, ''), coalesce(profile_id, ''), coalesce(requested_by::text, ''), sender_name,
	coalesce(client_request_id, ''), coalesce(resume_session_id, ''), coalesce(engine_session_id, ''),
	coalesce(worker_id, ''), epoch, last_seq, job, coalesce(user_message_id::text, ''), queued_at,
	dispatched_at, claimed_at, ended_at, coalesce(retry_of::text, '')`

func scanRun(row pgx.Row) (RunRow, error) {
	var r RunRow
	var state, engine string
	var epoch, last int64
	var job []byte
	err := row.Scan(&r.ID, &r.Tenant, &r.SessionID, &r.ProjectID, &state, &engine, &r.Model, &r.Effort, &r.Profile,
		&r.RequestedBy, &r.SenderName, &r.ClientRequestID, &r.ResumeSessionID, &r.EngineSession, &r.WorkerID,
		&epoch, &last, &job, &r.UserMessageID, &r.QueuedAt, &r.DispatchedAt, &r.ClaimedAt, &r.EndedAt, &r.RetryOf)
	if err != nil {
		return RunRow{}, notFound(err)
	}
	r.State, r.Engine, r.Epoch, r.LastSeq = events.RunStateName(state), events.EngineType(engine), uint64(epoch), uint64(last)
	if err := json.Unmarshal(job, &r.Job); err != nil {
		return RunRow{}, fmt.Errorf("run %s: decode job: %w", r.ID, err)
	}
	return r, nil
}

// InsertRun records a new queued run.
func InsertRun(ctx context.Context, tx pgx.Tx, r RunRow) error {
	job, err := json.Marshal(r.Job)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO streammgr.runs (id, tenant_id, session_id, project_id, state, engine, model,
		reasoning_effort, profile_id, job, requested_by, sender_name, client_request_id, queued_at, retry_of)
		VALUES ($1, $2, $3, $4, 'queued', $5, $6, nullif($7, ''), nullif($8, ''), $9, nullif($10, '')::uuid, $11,
		nullif($12, ''), $13, nullif($14, '')::uuid)`,
		r.ID, r.Tenant, r.SessionID, r.ProjectID, string(r.Engine), r.Model, r.Effort, r.Profile, job,
		r.RequestedBy, r.SenderName, r.ClientRequestID, r.QueuedAt, r.RetryOf)
	if err != nil {
		return fmt.Errorf("insert run: %w", err)
	}
	return nil
}

// MarkDispatched stores the job as dispatched at at, with its user message
// and the engine session it resumes. The run's timings come from one clock,
// streammgr's, and never go backwards: a dispatch is never before the queueing.
func MarkDispatched(ctx context.Context, tx pgx.Tx, r RunRow, at time.Time) error {
	job, err := json.Marshal(r.Job)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE streammgr.runs SET job = $2, user_message_id = nullif($3, '')::uuid,
		resume_session_id = nullif($4, ''), dispatched_at = greatest($5::timestamptz, queued_at) WHERE id = $1`,
		r.ID, job, r.UserMessageID, r.ResumeSessionID, at)
	return err
}

// LoadRun returns a run without a tenant check: for streammgr's own
// bookkeeping, never for a client request.
func LoadRun(ctx context.Context, db DB, id string) (RunRow, error) {
	if !isUUID(id) {
		return RunRow{}, ErrNotFound
	}
	return scanRun(db.QueryRow(ctx, `SELECT `+runColumns+` FROM streammgr.runs WHERE id = $1`, id))
}

// TenantRun returns a run of tenant.
func TenantRun(ctx context.Context, db DB, tenant, id string) (RunRow, error) {
	if !isUUID(id) {
		return RunRow{}, ErrNotFound
	}
	return scanRun(db.QueryRow(ctx, `SELECT `+runColumns+` FROM streammgr.runs WHERE id = $1 AND tenant_id = $2`, id, tenant))
}

// RunByClientRequest finds the run a retried send already created.
func RunByClientRequest(ctx context.Context, tx pgx.Tx, session, requestID string) (RunRow, bool, error) {
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM streammgr.runs
		WHERE session_id = $1 AND client_request_id = $2`, session, requestID))
	if errors.Is(err, ErrNotFound) {
		return RunRow{}, false, nil
	}
	return r, err == nil, err
}

// RetryOf returns the run that retries the lost run lost, if one was made.
func RetryOf(ctx context.Context, tx pgx.Tx, lost string) (RunRow, bool, error) {
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM streammgr.runs WHERE retry_of = $1`, lost))
	if errors.Is(err, ErrNotFound) {
		return RunRow{}, false, nil
	}
	return r, err == nil, err
}

// LostTurn is what a retry takes from the user message of the run it
// retries: the message's parent, under which the retry's own user message
// goes (a sibling of the lost one), and the prompt as the user typed it.
type LostTurn struct {
	Parent string
	Typed  []events.Block
}

// LostTurnOf reads the user message of run (of tenant): ErrNotFound when it
// has none (it was never dispatched).
func LostTurnOf(ctx context.Context, db DB, tenant, run string) (LostTurn, error) {
	var lt LostTurn
	var data []byte
	err := db.QueryRow(ctx, `SELECT coalesce(m.parent_message_id::text, ''), m.data FROM streammgr.runs r
		JOIN streammgr.messages m ON m.id = r.user_message_id WHERE r.id = $1 AND r.tenant_id = $2`, run, tenant).
		Scan(&lt.Parent, &data)
	if err != nil {
		return LostTurn{}, notFound(err)
	}
	o, err := events.DecodeOutput(data)
	if err != nil {
		return LostTurn{}, fmt.Errorf("run %s: decode user message: %w", run, err)
	}
	u, ok := o.(events.UserMessage)
	if !ok {
		return LostTurn{}, fmt.Errorf("run %s: user message is a %s", run, o.OutputType())
	}
	lt.Typed = u.Content
	return lt, nil
}

// NextQueued returns the run of session to dispatch next: a retry of a lost
// run first (it redoes a turn the waiting ones were sent after), else the
// oldest run still waiting.
func NextQueued(ctx context.Context, tx pgx.Tx, session string) (RunRow, bool, error) {
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM streammgr.runs
		WHERE session_id = $1 AND state = 'queued' AND dispatched_at IS NULL
		ORDER BY retry_of IS NULL, queued_at, id LIMIT 1
		FOR UPDATE`, session))
	if errors.Is(err, ErrNotFound) {
		return RunRow{}, false, nil
	}
	return r, err == nil, err
}

// ListRuns returns a session's runs, oldest first.
func ListRuns(ctx context.Context, db DB, tenant, session string, limit int) ([]RunRow, error) {
	if !isUUID(session) {
		return nil, ErrNotFound
	}
	if limit <= 0 || limit > 1000 {
		limit = 200
	}
	rows, err := db.Query(ctx, `SELECT `+runColumns+` FROM streammgr.runs WHERE session_id = $1 AND tenant_id = $2
		ORDER BY queued_at, id LIMIT $3`, session, tenant, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return scanRuns(rows)
}

// Unfinished returns runs not in a terminal state, for the sweeper.
func Unfinished(ctx context.Context, db DB) ([]RunRow, error) {
	rows, err := db.Query(ctx, `SELECT `+runColumns+` FROM streammgr.runs
		WHERE state NOT IN ('completed', 'failed', 'cancelled', 'lost') ORDER BY queued_at LIMIT 10000`)
	if err != nil {
		return nil, fmt.Errorf("unfinished runs: %w", err)
	}
	return scanRuns(rows)
}

// scanRuns reads every row of rows as a run, and closes them.
func scanRuns(rows pgx.Rows) ([]RunRow, error) {
	defer rows.Close()
	var out []RunRow
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Public converts a row to the client view, with usage and timings.
func Public(ctx context.Context, db DB, r RunRow) (events.Run, error) {
	out := events.Run{ID: r.ID, SessionID: r.SessionID, ProjectID: r.ProjectID, State: r.State, Engine: r.Engine,
		Model: r.Model, Effort: r.Effort, WorkerID: r.WorkerID, Epoch: r.Epoch, EngineSessionID: r.EngineSession,
		ClientRequestID: r.ClientRequestID, QueuedAt: r.QueuedAt, DispatchedAt: r.DispatchedAt, ClaimedAt: r.ClaimedAt, EndedAt: r.EndedAt,
		StartSnapshot: r.Job.Snapshot, RetryOf: r.RetryOf, Prompt: PromptExcerpt(r.Job.Prompt)}
	var usage, metered, snapshot []byte
	var errMsg, kind *string
	err := db.QueryRow(ctx, `SELECT usage, metered_usage, cost_usd, error, error_kind, first_output_at, artifact_revision, snapshot
		FROM streammgr.runs WHERE id = $1`,
		r.ID).Scan(&usage, &metered, &out.CostUSD, &errMsg, &kind, &out.FirstOutputAt, &out.ArtifactRevision, &snapshot)
	if err != nil {
		return out, notFound(err)
	}
	out.Usage, out.MeteredUsage = tokenUsage(usage), tokenUsage(metered)
	if snapshot != nil {
		var s events.RunSnapshot
		if json.Unmarshal(snapshot, &s) == nil {
			out.Snapshot = &s
		}
	}
	if errMsg != nil {
		out.Error = *errMsg
	}
	if kind != nil {
		out.ErrorKind = *kind
	}
	return out, nil
}

// Routing is what the router needs about a run, read in one query.
type Routing struct {
	Run                                 RunRow
	Head, ModelName, AccountID, Account string
}

// LoadRouting reads a run with its session's HEAD and the account and model
// naming its messages are stamped with.
func LoadRouting(ctx context.Context, db DB, run string) (Routing, error) {
	if !isUUID(run) {
		return Routing{}, ErrNotFound
	}
	var rt Routing
	var state, engine string
	var epoch, last int64
	var job []byte
	r := &rt.Run
	err := db.QueryRow(ctx, `SELECT r.id::text, r.tenant_id::text, r.session_id::text, r.project_id::text, r.state, r.engine,
		r.model, coalesce(r.reasoning_effort, ''), coalesce(r.requested_by::text, ''), r.sender_name,
		coalesce(r.engine_session_id, ''), r.epoch, r.last_seq, r.job,
		coalesce(s.head_message_id::text, ''), s.model_name, coalesce(r.job->>'accountId', ''), s.account_name
		FROM streammgr.runs r JOIN streammgr.chat_sessions s ON s.id = r.session_id WHERE r.id = $1`, run).
		Scan(&r.ID, &r.Tenant, &r.SessionID, &r.ProjectID, &state, &engine, &r.Model, &r.Effort, &r.RequestedBy,
			&r.SenderName, &r.EngineSession, &epoch, &last, &job, &rt.Head, &rt.ModelName, &rt.AccountID, &rt.Account)
	if err != nil {
		return Routing{}, notFound(err)
	}
	r.State, r.Engine, r.Epoch, r.LastSeq = events.RunStateName(state), events.EngineType(engine), uint64(epoch), uint64(last)
	if err := json.Unmarshal(job, &r.Job); err != nil {
		return Routing{}, fmt.Errorf("run %s: decode job: %w", r.ID, err)
	}
	return rt, nil
}

// tokenUsage decodes a usage column; NULL (or a value that is not one) is
// nil.
func tokenUsage(col []byte) *events.TokenUsage {
	if len(col) == 0 {
		return nil
	}
	var u events.TokenUsage
	if json.Unmarshal(col, &u) != nil {
		return nil
	}
	return &u
}
