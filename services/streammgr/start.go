package streammgr

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// startAttempts bounds how often a turn is prepared again because its
// session changed between the preparation and the lock.
const startAttempts = 5

// errSessionChanged says that a session no longer is what its turn was
// prepared from: the turn is prepared again.
var errSessionChanged = errors.New("the session changed while the turn was prepared")

// start runs one turn: in one transaction it creates the run and, when the
// session is idle and its tenant has room (admission.go), dispatches it (the
// user message saved as the run's first event, the engine session to resume
// resolved); when the tenant is at its limit the run is held until the
// admitter dispatches it, and the client is told why; otherwise the run
// waits behind the session's active run and starts when that one completes.
// A run that would wait while its tenant's queue is full is refused (429
// tenant_queue_full). The job is published after the commit. What needs the bus is prepared before
// the transaction locks the session (prepare).
func (m *Manager) start(ctx context.Context, req events.StartTurnRequest) (events.StartTurnReply, error) {
	if err := m.validateStart(&req); err != nil {
		return events.StartTurnReply{}, err
	}
	for attempt := 1; ; attempt++ {
		prep, err := m.prepare(ctx, req)
		if err != nil {
			return events.StartTurnReply{}, mapStoreErr(err, "session")
		}
		reply, err := m.startPrepared(ctx, req, prep)
		if !errors.Is(err, errSessionChanged) {
			return reply, err
		}
		if attempt == startAttempts {
			return events.StartTurnReply{}, svc.Conflict("session %s changed while the turn was prepared; send it again", req.SessionID)
		}
	}
}

// preparation is what a turn needs from the bus — whether its engine is
// offered, and, for an idle session, its engine prompt (which may ask
// artifacts to expand a slash skill) — worked out from an unlocked read of
// the session. No bus request is made while a session row is locked: the
// event writer locks the same rows for its batches, and a slow answer would
// hold up every session on that writer.
type preparation struct {
	seen       store.Locked // the session as read, the request's selection applied
	offeredErr error
	prompt     []events.Block // the engine prompt; nil when the session was busy
}

// prepare reads the session unlocked and prepares the turn from it.
func (m *Manager) prepare(ctx context.Context, req events.StartTurnRequest) (preparation, error) {
	l, err := store.PeekSession(ctx, m.db, req.TenantID, req.SessionID)
	if err != nil {
		return preparation{}, err
	}
	select_(&l, req)
	engine := events.EngineType(l.Engine)
	p := preparation{seen: l, offeredErr: m.checkEngineOffered(ctx, engine)}
	if l.ActiveRunID == "" {
		resume, err := resumeID(ctx, m.db, l, engine)
		if err != nil {
			return preparation{}, err
		}
		p.prompt = m.buildEnginePrompt(ctx, turn{Tenant: l.Tenant, User: req.UserID, Project: l.Project, Session: l.ID,
			Profile: l.Profile, Engine: engine, ResumeSessionID: resume}, req.Prompt)
	}
	return p, nil
}

// startPrepared is one attempt of start, with the session locked; it fails
// with errSessionChanged when the session no longer is what prep was made
// from.
func (m *Manager) startPrepared(ctx context.Context, req events.StartTurnRequest, prep preparation) (events.StartTurnReply, error) {
	var reply events.StartTurnReply
	var after placement
	err := pgx.BeginFunc(ctx, m.db, func(tx pgx.Tx) error {
		// The tenant's admission lock comes before the session's row lock,
		// here as in the admitter.
		if err := store.LockTenant(ctx, tx, req.TenantID); err != nil {
			return err
		}
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
		if err := m.checkWorkspaceQuota(ctx, tx, l.Tenant); err != nil {
			return err
		}
		if req.ParentMessageID != "" {
			if l.ActiveRunID != "" {
				return svc.Conflict("session %s has a turn running (run %s); fork from a message once it ends", l.ID, l.ActiveRunID)
			}
			if err := store.SetHead(ctx, tx, l, req.ParentMessageID); err != nil {
				return err
			}
		}
		select_(&l, req)
		if l.Project != prep.seen.Project || l.Engine != prep.seen.Engine || l.Profile != prep.seen.Profile {
			return errSessionChanged
		}
		if prep.offeredErr != nil {
			return prep.offeredErr
		}
		adm, err := m.disp.decide(ctx, tx, l.Tenant, l.ActiveRunID != "")
		if err != nil {
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
		run.Job.TraceParent = traceParent(ctx)
		if err := store.InsertRun(ctx, tx, run); err != nil {
			return err
		}
		reply = events.StartTurnReply{RunID: run.ID, ClientRequestID: run.ClientRequestID}
		after, err = m.placeLocked(ctx, tx, l, run, adm, &reply, func() ([]events.Block, error) {
			if prep.prompt == nil || l.HeadMessageID != prep.seen.HeadMessageID {
				return nil, errSessionChanged // the prompt was prepared for another HEAD, or not at all
			}
			return prep.prompt, nil
		})
		return err
	})
	if err != nil {
		return events.StartTurnReply{}, mapStoreErr(err, "session")
	}
	after.run(ctx, m)
	return reply, nil
}

// placement is what a start leaves to do after its commit: publish a
// dispatched run's job, or tell the session's clients why a run waits (held
// for admission, or queued behind the active run).
type placement struct {
	fx      *dispatched
	held    *store.RunRow
	waiting *store.RunRow
	reason  string
}

// reasonBehind is the reason a run queued behind its session's active run
// gives its clients.
const reasonBehind = "behind the session's running turn"

func (p placement) run(ctx context.Context, m *Manager) {
	if p.fx != nil {
		m.disp.afterDispatch(background(ctx), p.fx)
	}
	if p.held != nil {
		runsHeld.Add(ctx, 1)
		m.disp.publishQueued(background(ctx), *p.held, p.reason)
	}
	if p.waiting != nil {
		m.disp.publishQueued(background(ctx), *p.waiting, p.reason)
	}
}

// placeLocked puts run, just inserted into session l (locked by tx), where
// adm and the session say: behind the session's active run, held for its
// tenant's admission, or dispatched with the engine prompt prompt returns
// (nil: built by the dispatch). It fills reply's queueing and user message.
func (m *Manager) placeLocked(ctx context.Context, tx pgx.Tx, l store.Locked, run store.RunRow, adm admission,
	reply *events.StartTurnReply, prompt func() ([]events.Block, error)) (placement, error) {
	if l.ActiveRunID != "" {
		reply.Queued = true
		return placement{waiting: &run, reason: reasonBehind}, nil // waits behind the active run
	}
	if adm.hold {
		reply.Queued, reply.QueuedReason = true, adm.reason
		return placement{held: &run, reason: adm.reason}, store.Hold(ctx, tx, l.ID, run.ID, run.QueuedAt)
	}
	engine, err := prompt()
	if err != nil {
		return placement{}, err
	}
	fx, err := m.disp.dispatchLocked(ctx, tx, l, run, engine)
	if err != nil {
		return placement{}, err
	}
	reply.UserMessageRowID = fx.userRow
	return placement{fx: fx}, nil
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
	if req.ParentMessageID != "" {
		l.HeadMessageID = req.ParentMessageID // a fork continues from there
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
	switch {
	case errors.Is(err, store.ErrNotFound):
		return svc.NotFound("%s not found", what)
	case errors.Is(err, store.ErrNotInSession):
		return svc.NotFound("message: %v", err)
	}
	return err
}
