package streammgr

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/eventlog"
	"clopen.dev/services/streammgr/internal/router"
	"clopen.dev/services/streammgr/internal/store"
)

// dispatcher starts runs: the one owner of dispatch. The start handler
// dispatches a turn into an idle session; the event writer, when a run
// ends, dispatches the session's next queued turn. Both hold the same
// dispatcher, and neither knows the other.
type dispatcher struct {
	db    *pgxpool.Pool
	bus   bus
	flags jetstream.KeyValue // run_ctl
	log   *slog.Logger
	// prompt builds the engine prompt of a turn (buildEnginePrompt).
	prompt func(ctx context.Context, t turn, typed []events.Block) []events.Block
	// prime tells the pipeline about a run just dispatched, so its first
	// event routes without a database read.
	prime func(run store.RunRow, head, modelName, accountName string)
	// forget tells the pipeline that runs were deleted: their events are dropped.
	forget func(runs []string)
	// limits are the default tenant limits; admit admits held runs.
	limits store.Limits
	admit  *tenantSet
	// watch enforces budgets: admission asks it to count a refusal.
	watch *budgetWatch
	// retryLost retries a run that became lost once (Config.RetryLost).
	retryLost bool
}

// dispatched is what a dispatch leaves to do after its transaction commits.
type dispatched struct {
	run                    store.RunRow
	userRow                string
	userMsg                events.UserMessage
	parent                 string
	modelName, accountName string
}

// dispatchLocked starts run in session l (locked FOR UPDATE by the caller's
// transaction): the user message becomes HEAD and the run's first event, the
// resume id is resolved by walking HEAD, the engine prompt is built (unless
// the caller prepared it, before it took the lock), and the run becomes the
// session's active run.
//
// A retry of a lost run (run.RetryOf) is the lost turn again: its user
// message goes under the lost user message's parent (a sibling: HEAD's
// history holds the prompt once), with the lost turn's typed prompt, its
// engine prompt and the snapshot it started from.
func (d *dispatcher) dispatchLocked(ctx context.Context, tx pgx.Tx, l store.Locked, run store.RunRow, prompt []events.Block) (*dispatched, error) {
	now := time.Now().UTC()
	userRow := router.RowID(run.ID, 0, 1, 0)
	if run.RetryOf != "" {
		lost, err := store.TenantRun(ctx, tx, run.Tenant, run.RetryOf)
		if err != nil {
			return nil, err
		}
		lt, err := store.LostTurnOf(ctx, tx, run.Tenant, run.RetryOf)
		if err != nil {
			return nil, err
		}
		l.HeadMessageID, run.Job.Prompt, prompt = lt.Parent, lt.Typed, lost.Job.Prompt
		run.Job.Snapshot = lost.Job.Snapshot
	}
	msg := events.UserMessage{
		MessageBase: events.MessageBase{CreatedAt: now, MessageID: userRow,
			Engine: events.MessageEngine{Type: run.Engine, Model: events.ModelRef{ID: run.Model}, ReasoningEffort: run.Effort}},
		Sender:  events.Sender{ID: run.RequestedBy, Name: run.SenderName},
		Content: run.Job.Prompt,
	}
	resume, err := resumeID(ctx, tx, l, run.Engine)
	if err != nil {
		return nil, err
	}
	run.Job.ResumeSessionID = resume
	run.ResumeSessionID = resume
	if run.RetryOf == "" {
		held, err := store.HeadSnapshotHolder(ctx, tx, l.HeadMessageID, 500)
		if err != nil {
			return nil, err
		}
		run.Job.Snapshot, run.Job.PreferWorker = held.ID, held.Worker
		if run.Job.Snapshot == "" {
			run.Job.Snapshot = l.BaseSnapshot // the session's first turn on this branch: the project's files
		}
	}
	if prompt == nil {
		prompt = d.prompt(ctx, turnOf(run), run.Job.Prompt)
	}
	run.Job.Prompt = prompt
	payload, err := events.EncodeOutput(msg)
	if err != nil {
		return nil, err
	}
	if err := eventlog.RecordUser(ctx, tx, run.ID, payload); err != nil {
		return nil, err
	}
	parent := l.HeadMessageID
	if err := store.SaveUserTurn(ctx, tx, l, run.ID, userRow, msg, router.Title(textOf(msg.Content))); err != nil {
		return nil, err
	}
	run.UserMessageID = userRow
	if err := store.MarkDispatched(ctx, tx, run, now); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE streammgr.runs SET last_seq = 1 WHERE id = $1`, run.ID); err != nil {
		return nil, err
	}
	if err := store.SetActiveRun(ctx, tx, l.ID, run.ID); err != nil {
		return nil, err
	}
	return &dispatched{run: run, userRow: userRow, userMsg: msg, parent: parent, modelName: l.ModelName, accountName: l.AccountName}, nil
}

// resumeID walks the session's HEAD towards the root and returns the engine
// session of the newest engine-made message, unless the branch was made by
// another engine (then the turn starts fresh: no foreign session id is ever
// handed to an engine).
func resumeID(ctx context.Context, db store.DB, l store.Locked, engine events.EngineType) (string, error) {
	path, err := store.WalkHead(ctx, db, l.HeadMessageID, 500)
	if err != nil {
		return "", err
	}
	for _, b := range path {
		if b.Type == events.TypeUser {
			continue
		}
		if b.EngineType != "" && b.EngineType != string(engine) {
			return "", nil // the branch belongs to another engine
		}
		if b.EngineSession != "" && b.EngineSession != l.ID {
			return b.EngineSession, nil
		}
	}
	return "", nil
}

// afterDispatch tells clients about the user message and publishes the job.
// A failed publish is retried by the sweeper (same Msg-Id: never twice).
func (d *dispatcher) afterDispatch(ctx context.Context, fx *dispatched) {
	run := fx.run
	ev := events.ChatEvent{Type: events.ChatTypeMessage, ChatSessionID: run.SessionID, ProjectID: run.ProjectID,
		RunID: run.ID, Source: &events.SourceRef{Run: run.ID, Epoch: 0, Seq: 1}, Timestamp: fx.userMsg.CreatedAt,
		Data: events.ChatMessage{Message: fx.userMsg, MessageRowID: fx.userRow, ParentMessageRowID: fx.parent,
			SenderID: run.RequestedBy, SenderName: run.SenderName, Engine: run.Engine}}
	d.bus.publishChat(ctx, run.Tenant, []events.ChatEvent{ev})
	if d.deletedMeanwhile(ctx, run) {
		return
	}
	d.prime(run, fx.userRow, fx.modelName, fx.accountName)
	if err := d.bus.publishJob(ctx, run.Job); err != nil {
		d.log.ErrorContext(ctx, "publish job (the sweeper will retry)", "run_id", run.ID, "err", err)
	}
}

// releaseLocked ends run's hold on its session (locked by the caller's
// transaction) and holds the session's next queued turn, if any, for its
// tenant's admission: the admitter, kicked after the commit, dispatches it
// when the tenant has room. The caller holds session rows, so it takes no
// tenant lock itself (that lock always comes first).
func (d *dispatcher) releaseLocked(ctx context.Context, tx pgx.Tx, tenant, session, run string) error {
	l, err := store.LockSession(ctx, tx, tenant, session)
	if errors.Is(err, store.ErrNotFound) {
		return nil // the session was deleted
	}
	if err != nil {
		return err
	}
	if l.ActiveRunID != run && l.ActiveRunID != "" {
		return nil
	}
	if err := store.SetActiveRun(ctx, tx, session, ""); err != nil {
		return err
	}
	next, ok, err := store.NextQueued(ctx, tx, session)
	if err != nil || !ok {
		return err
	}
	return store.Hold(ctx, tx, session, next.ID, time.Now().UTC())
}

// retryLocked queues the automatic retry of e, a run that just became lost
// in the caller's transaction (which holds its session's lock): a run that
// is itself a retry, or that was lost before its turn started, is not
// retried. releaseLocked then takes the retry first.
func (d *dispatcher) retryLocked(ctx context.Context, tx pgx.Tx, e store.Ended) error {
	lost, err := store.TenantRun(ctx, tx, e.Tenant, e.Run)
	if err != nil || lost.RetryOf != "" || lost.UserMessageID == "" {
		return ignoreNotFound(err)
	}
	run, made, err := insertRetry(ctx, tx, e.Tenant, e.Run)
	if err != nil {
		return err
	}
	if made {
		d.log.InfoContext(ctx, "retrying a lost run", "run_id", e.Run, "retry_run_id", run.ID)
	}
	return nil
}

// flagEnded marks an ended run in run_ctl so that a stale copy of its job
// (redelivered, or republished by the sweeper) is dropped by any worker.
func (d *dispatcher) flagEnded(ctx context.Context, run string) {
	b := []byte(`{"verb":"` + events.VerbAbandon + `","at":"` + time.Now().UTC().Format(time.RFC3339Nano) + `"}`)
	if _, err := d.flags.Put(ctx, run, b); err != nil {
		d.log.Warn("flag ended run", "run_id", run, "err", err)
	}
}

// deletedMeanwhile reports whether run's session was deleted after the
// dispatch of run committed: the deletion's purge may have come before the
// user message just published, so it is purged again, and the job is not
// published (the deletion flagged the run cancelled anyway).
func (d *dispatcher) deletedMeanwhile(ctx context.Context, run store.RunRow) bool {
	var exists bool
	err := d.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM streammgr.chat_sessions WHERE id = $1)`, run.SessionID).Scan(&exists)
	if err != nil || exists {
		return false // when in doubt, go on: a job for a deleted run is dropped by its worker
	}
	d.forget([]string{run.ID})
	d.bus.purgeBus(ctx, run.Tenant, run.SessionID, []string{run.ID})
	return true
}
