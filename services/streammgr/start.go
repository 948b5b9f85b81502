package streammgr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/natstrace"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/router"
	"clopen.dev/services/streammgr/internal/store"
)

// start runs one turn: in one transaction it creates the run and, when the
// session is idle, dispatches it (the user message saved as the run's first
// event, the engine session to resume resolved); otherwise the run waits
// behind the session's active run and starts when that one completes. The
// job is published after the commit.
func (m *Manager) start(ctx context.Context, req events.StartTurnRequest) (events.StartTurnReply, error) {
	if err := m.validateStart(&req); err != nil {
		return events.StartTurnReply{}, err
	}
	var reply events.StartTurnReply
	var fx *dispatched
	err := pgx.BeginFunc(ctx, m.db, func(tx pgx.Tx) error {
		l, err := store.LockSession(ctx, tx, req.TenantID, req.SessionID)
		if err != nil {
			return err
		}
		if req.ClientRequestID != "" {
			prev, found, err := store.RunByClientRequest(ctx, tx, l.ID, req.ClientRequestID)
			if err != nil || found {
				reply = events.StartTurnReply{RunID: prev.ID, Queued: prev.DispatchedAt == nil, UserMessageRowID: prev.UserMessageID,
					ClientRequestID: prev.ClientRequestID}
				return err
			}
		}
		select_(&l, req)
		if err := m.checkEngineOffered(ctx, events.EngineType(l.Engine)); err != nil {
			return err
		}
		if err := store.SaveSelection(ctx, tx, l); err != nil {
			return err
		}
		run := store.RunRow{ID: uuid.NewString(), Tenant: l.Tenant, SessionID: l.ID, ProjectID: l.Project,
			State: events.RunQueued, Engine: events.EngineType(l.Engine), Model: l.Model, Effort: l.Effort, Profile: l.Profile,
			RequestedBy: req.UserID, SenderName: req.UserName, ClientRequestID: req.ClientRequestID, QueuedAt: time.Now().UTC(),
			Job: events.Job{Tenant: l.Tenant, SessionID: l.ID, ProjectID: l.Project, Engine: events.EngineType(l.Engine),
				Model: l.Model, Provider: l.Provider, AccountID: l.AccountID, Effort: l.Effort, ProfileID: l.Profile,
				Prompt: req.Prompt, RequestedBy: req.UserID}}
		run.Job.RunID, run.Job.QueuedAt = run.ID, run.QueuedAt
		if err := store.InsertRun(ctx, tx, run); err != nil {
			return err
		}
		reply = events.StartTurnReply{RunID: run.ID, Queued: l.ActiveRunID != "", ClientRequestID: run.ClientRequestID}
		if l.ActiveRunID != "" {
			return nil // waits behind the active run
		}
		fx, err = m.dispatchLocked(ctx, tx, l, run)
		if err == nil {
			reply.UserMessageRowID = fx.userRow
		}
		return err
	})
	if err != nil {
		return events.StartTurnReply{}, mapStoreErr(err, "session")
	}
	if fx != nil {
		m.afterDispatch(background(ctx), fx)
	}
	return reply, nil
}

// validateStart checks a start request before touching the database.
func (m *Manager) validateStart(req *events.StartTurnRequest) error {
	if len(req.Prompt) == 0 {
		return svc.Invalid("prompt: empty")
	}
	size := 0
	for i, b := range req.Prompt {
		switch v := b.(type) {
		case events.TextBlock:
			size += len(v.Text)
		case events.ImageBlock:
			size += len(v.Data)
		case events.DocumentBlock:
			size += len(v.Data)
		default:
			return svc.Invalid("prompt[%d]: a prompt holds text, image and document blocks, not %s", i, b.BlockType())
		}
	}
	if strings.TrimSpace(textOf(req.Prompt)) == "" && size == 0 {
		return svc.Invalid("prompt: no text")
	}
	if size > m.cfg.MaxPromptBytes {
		return svc.Errorf(http.StatusRequestEntityTooLarge, "too_large", "prompt is %d bytes, the limit is %d", size, m.cfg.MaxPromptBytes)
	}
	if req.Engine != "" {
		if _, err := events.ParseEngineType(string(req.Engine)); err != nil {
			return svc.Invalid("engine: %v", err)
		}
	}
	if len(req.ClientRequestID) > 128 {
		return svc.Invalid("clientRequestId: longer than 128 characters")
	}
	return nil
}

// select_ applies the request's engine selection over the session's.
func select_(l *store.Locked, req events.StartTurnRequest) {
	if req.Engine != "" && string(req.Engine) != l.Engine {
		l.Engine, l.Model, l.Provider = string(req.Engine), "", ""
	}
	if req.Model != "" {
		l.Model = req.Model
	}
	if req.Provider != "" {
		l.Provider = req.Provider
	}
	if req.AccountID != "" {
		l.AccountID = req.AccountID
	}
	if req.Effort != "" {
		l.Effort = req.Effort
	}
	if req.ProfileID != nil {
		l.Profile = *req.ProfileID
	}
}

// checkEngineOffered fails fast when no live worker offers the engine, so a
// user learns it now rather than watching a turn wait forever. The offered
// set is read from the workers bucket at most every two seconds.
func (m *Manager) checkEngineOffered(ctx context.Context, engine events.EngineType) error {
	offered, known := m.offeredEngines(ctx)
	if !known || offered[engine] {
		return nil // cannot tell, or offered: let the job go
	}
	return svc.Errorf(http.StatusServiceUnavailable, "engine_unavailable",
		"no worker offers the %s engine right now; install it on a worker (clopen engines install %s) or pick another engine", engine, engine)
}

// offeredEngines returns the engines live workers advertise; known is false
// when no worker has ever started or the bucket cannot be read.
func (m *Manager) offeredEngines(ctx context.Context) (map[events.EngineType]bool, bool) {
	m.mu.Lock()
	if time.Since(m.offeredAt) < 2*time.Second && m.offered != nil {
		defer m.mu.Unlock()
		return m.offered, true
	}
	m.mu.Unlock()
	workers := m.workerBucket()
	if workers == nil {
		return nil, false
	}
	lister, err := workers.ListKeys(ctx)
	if err != nil {
		return nil, false
	}
	defer func() { _ = lister.Stop() }()
	offered := map[events.EngineType]bool{}
	for key := range lister.Keys() {
		e, err := workers.Get(ctx, key)
		if err != nil {
			continue
		}
		var info events.WorkerInfo
		if json.Unmarshal(e.Value(), &info) != nil {
			continue
		}
		for _, es := range info.Engines {
			offered[es.Engine] = true
		}
	}
	m.mu.Lock()
	m.offered, m.offeredAt = offered, time.Now()
	m.mu.Unlock()
	return offered, true
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
// resume id is resolved by walking HEAD, the engine prompt is built, and the
// run becomes the session's active run.
func (m *Manager) dispatchLocked(ctx context.Context, tx pgx.Tx, l store.Locked, run store.RunRow) (*dispatched, error) {
	now := time.Now().UTC()
	userRow := router.RowID(run.ID, 0, 1, 0)
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
	run.Job.Prompt = m.buildEnginePrompt(ctx, turnOf(run), run.Job.Prompt)
	payload, err := events.EncodeOutput(msg)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO streammgr.run_events (run_id, epoch, seq, type, payload)
		VALUES ($1, 0, 1, 'user', $2) ON CONFLICT DO NOTHING`, run.ID, payload); err != nil {
		return nil, fmt.Errorf("record user message: %w", err)
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
func resumeID(ctx context.Context, tx pgx.Tx, l store.Locked, engine events.EngineType) (string, error) {
	path, err := store.WalkHead(ctx, tx, l.HeadMessageID, 500)
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
func (m *Manager) afterDispatch(ctx context.Context, fx *dispatched) {
	run := fx.run
	ev := events.ChatEvent{Type: events.ChatTypeMessage, ChatSessionID: run.SessionID, ProjectID: run.ProjectID,
		RunID: run.ID, Source: &events.SourceRef{Run: run.ID, Epoch: 0, Seq: 1}, Timestamp: fx.userMsg.CreatedAt,
		Data: events.ChatMessage{Message: fx.userMsg, MessageRowID: fx.userRow, ParentMessageRowID: fx.parent,
			SenderID: run.RequestedBy, SenderName: run.SenderName, Engine: run.Engine}}
	m.publishChat(ctx, run.Tenant, []events.ChatEvent{ev})
	if m.deletedMeanwhile(ctx, run) {
		return
	}
	m.pipe.prime(run, fx.userRow, fx.modelName, fx.accountName)
	if err := m.publishJob(ctx, run.Job); err != nil {
		m.log.ErrorContext(ctx, "publish job (the sweeper will retry)", "run_id", run.ID, "err", err)
	}
}

// publishJob sends a run's job to the workers of its engine.
func (m *Manager) publishJob(ctx context.Context, job events.Job) error {
	subject, err := events.JobSubject(string(job.Engine))
	if err != nil {
		return err
	}
	data, err := json.Marshal(job)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	natstrace.Inject(ctx, msg.Header)
	_, err = m.js.PublishMsg(ctx, msg, jetstream.WithMsgID(job.RunID))
	return err
}

// publishChat publishes chat events synchronously (request paths, not the
// hot pipeline), each under its Msg-Id.
func (m *Manager) publishChat(ctx context.Context, tenant string, evs []events.ChatEvent) {
	for i, ev := range evs {
		subject, err := events.ChatSubject(tenant, ev.ChatSessionID)
		if err != nil {
			m.log.Error("chat subject", "err", err)
			return
		}
		data, err := json.Marshal(ev)
		if err != nil {
			m.log.Error("encode chat event", "err", err)
			return
		}
		opts := []jetstream.PublishOpt{}
		if id := ev.MsgID(i); id != "" {
			opts = append(opts, jetstream.WithMsgID(id))
		}
		if _, err := m.js.Publish(ctx, subject, data, opts...); err != nil {
			m.log.Error("publish chat event", "type", ev.Type, "err", err)
		}
	}
}

func textOf(blocks []events.Block) string {
	var b strings.Builder
	for _, bl := range blocks {
		if t, ok := bl.(events.TextBlock); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// mapStoreErr turns store errors into API errors; others pass through.
func mapStoreErr(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return svc.NotFound("%s not found", what)
	}
	return err
}
