// Package chats is the gateway's side of streammgr: chat sessions, messages,
// runs and snapshots, fetched and changed over svc.Call. Every call carries
// the caller's events.Caller, built from its API key and nothing else, and
// a caller token the gateway signs for it (identity.Bus), and
// every session or run is checked against the caller's project access before
// the gateway acts on it or returns it: streammgr scopes by tenant, the
// gateway adds project membership.
package chats

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Service is the name streammgr's endpoints live under.
const Service = "streammgr"

// Projects answers whether a principal may use a project.
type Projects interface {
	// Project returns the project if p may use it, else apierr.ErrNotFound.
	Project(ctx context.Context, p identity.Principal, id string) (api.Project, error)
}

// Chats calls streammgr for authenticated principals. It is safe for
// concurrent use.
type Chats struct {
	bus      *identity.Bus
	projects Projects
	homes    homes
	cfg      Config
}

// Config tunes the calls to streammgr.
type Config struct {
	// StartTimeout bounds one attempt of a send's start call (a send makes
	// two before it answers 504); zero is svc.DefaultTimeout.
	StartTimeout time.Duration
}

// New returns a Chats calling streammgr over nc.
func New(bus *identity.Bus, projects Projects, cfg Config) *Chats {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = svc.DefaultTimeout
	}
	return &Chats{bus: bus, projects: projects, cfg: cfg}
}

// call sends req to svc.streammgr.<op>.
func (c *Chats) call(ctx context.Context, op string, req, resp any) error {
	return c.bus.Call(ctx, Subject(op), req, resp)
}

// Subject is the subject of streammgr's endpoint op: svc.streammgr.<op>.
// The dotted ops (sessions.get) span several subject tokens, which
// events.ServiceSubject refuses, so the subject is joined here; the ops are
// the constants of pkg/events, never client input.
func Subject(op string) string { return "svc." + Service + "." + op }

// checkID refuses an id that cannot name a session or run: it must be one
// subject token. Such an id cannot exist, so it is not found.
func checkID(kind, id string) error {
	if events.ValidToken(id) != nil {
		return apierr.New(apierr.ErrNotFound, "%s %q not found", kind, id)
	}
	return nil
}

// Session returns session id if p may use its project. A session of another
// tenant, or of a project p is not in, is apierr.ErrNotFound.
func (c *Chats) Session(ctx context.Context, p identity.Principal, id string) (events.Session, error) {
	if err := checkID("session", id); err != nil {
		return events.Session{}, err
	}
	var s events.Session
	if err := c.call(ctx, events.OpSessionGet, events.SessionRef{Caller: p.Caller(), SessionID: id}, &s); err != nil {
		return s, err
	}
	if err := c.canUse(ctx, p, s.ProjectID, "session", id); err != nil {
		return events.Session{}, err
	}
	c.homes.put(p.TenantID, id, s.ProjectID)
	return s, nil
}

// access checks that p may act on session: against its project when the
// gateway knows which one that is (see homes), else by fetching the session.
func (c *Chats) access(ctx context.Context, p identity.Principal, session string) error {
	if err := checkID("session", session); err != nil {
		return err
	}
	if project, ok := c.homes.get(p.TenantID, session); ok {
		return c.canUse(ctx, p, project, "session", session)
	}
	_, err := c.Session(ctx, p, session)
	return err
}

// Run returns run id if p may use its project.
func (c *Chats) Run(ctx context.Context, p identity.Principal, id string) (events.Run, error) {
	if err := checkID("run", id); err != nil {
		return events.Run{}, err
	}
	var r events.Run
	if err := c.call(ctx, events.OpRunGet, events.RunRef{Caller: p.Caller(), RunID: id}, &r); err != nil {
		return r, err
	}
	if err := c.canUse(ctx, p, r.ProjectID, "run", id); err != nil {
		return events.Run{}, err
	}
	return r, nil
}

// Retry retries run id, which must be lost, as a new run of its session;
// p must be allowed to send in that session.
func (c *Chats) Retry(ctx context.Context, p identity.Principal, id string) (events.StartTurnReply, error) {
	r, err := c.Run(ctx, p, id)
	if err != nil {
		return events.StartTurnReply{}, err
	}
	if err := c.access(ctx, p, r.SessionID); err != nil {
		return events.StartTurnReply{}, err
	}
	var out events.StartTurnReply
	err = c.call(ctx, events.OpRunRetry, events.RunRef{Caller: p.Caller(), RunID: id}, &out)
	return out, err
}

// canUse hides a resource whose project p may not use behind not-found.
func (c *Chats) canUse(ctx context.Context, p identity.Principal, project, kind, id string) error {
	_, err := c.projects.Project(ctx, p, project)
	if errors.Is(err, apierr.ErrNotFound) {
		return apierr.New(apierr.ErrNotFound, "%s %s not found", kind, id)
	}
	return err
}

// ListSessions lists a project's sessions, newest first.
func (c *Chats) ListSessions(ctx context.Context, p identity.Principal, project, query string, limit int) ([]events.Session, error) {
	if len(query) > events.MaxSessionQuery {
		return nil, apierr.New(apierr.ErrInvalid, "q: longer than %d bytes", events.MaxSessionQuery)
	}
	if _, err := c.projects.Project(ctx, p, project); err != nil {
		return nil, err
	}
	var out []events.Session
	err := c.call(ctx, events.OpSessionList, events.SessionList{Caller: p.Caller(), ProjectID: project, Query: query, Limit: limit}, &out)
	return out, err
}

// CreateSession creates a session in project, which p must be able to use:
// streammgr trusts the project id it is given.
func (c *Chats) CreateSession(ctx context.Context, p identity.Principal, project string, in api.CreateSession) (events.Session, error) {
	pr, err := c.projects.Project(ctx, p, project)
	if err != nil {
		return events.Session{}, err
	}
	if err := checkEngine(in.Engine); err != nil {
		return events.Session{}, err
	}
	var s events.Session
	err = c.call(ctx, events.OpSessionCreate, events.SessionCreate{Caller: p.Caller(), ProjectID: project,
		Title: in.Title, Engine: in.Engine, Model: in.Model, Effort: in.Effort, ProfileID: in.ProfileID,
		BaseSnapshot: pr.BaseSnapshot}, &s)
	if err == nil {
		c.homes.put(p.TenantID, s.ID, s.ProjectID)
	}
	return s, err
}

// UpdateSession changes a session's title or engine selection.
func (c *Chats) UpdateSession(ctx context.Context, p identity.Principal, id string, in api.UpdateSession) (events.Session, error) {
	if _, err := c.Session(ctx, p, id); err != nil {
		return events.Session{}, err
	}
	if in.Engine != nil {
		if err := checkEngine(*in.Engine); err != nil {
			return events.Session{}, err
		}
	}
	var s events.Session
	err := c.call(ctx, events.OpSessionUpdate, events.SessionUpdate{Caller: p.Caller(), SessionID: id,
		Title: in.Title, Engine: in.Engine, Model: in.Model, Effort: in.Effort, ProfileID: in.ProfileID}, &s)
	return s, err
}

// DeleteSession deletes a session.
func (c *Chats) DeleteSession(ctx context.Context, p identity.Principal, id string) error {
	if _, err := c.Session(ctx, p, id); err != nil {
		return err
	}
	if err := c.call(ctx, events.OpSessionDelete, events.SessionRef{Caller: p.Caller(), SessionID: id}, nil); err != nil {
		return err
	}
	c.homes.forget(p.TenantID, id)
	return nil
}

// Messages pages through a session's saved messages.
func (c *Chats) Messages(ctx context.Context, p identity.Principal, id, afterRow string, limit int) ([]events.MessageRow, error) {
	if _, err := c.Session(ctx, p, id); err != nil {
		return nil, err
	}
	var out []events.MessageRow
	err := c.call(ctx, events.OpMessagesList, events.MessageList{Caller: p.Caller(), SessionID: id, AfterRow: afterRow, Limit: limit}, &out)
	return out, err
}

// Checkpoints lists the turns on a session's HEAD, oldest first, with the
// snapshots they left.
func (c *Chats) Checkpoints(ctx context.Context, p identity.Principal, id string) ([]events.Checkpoint, error) {
	if _, err := c.Session(ctx, p, id); err != nil {
		return nil, err
	}
	var out []events.Checkpoint
	err := c.call(ctx, events.OpCheckpoints, events.SessionRef{Caller: p.Caller(), SessionID: id}, &out)
	return out, err
}

// Restore moves a session's HEAD back to one of its messages.
func (c *Chats) Restore(ctx context.Context, p identity.Principal, id, message string) (events.Session, error) {
	if _, err := c.Session(ctx, p, id); err != nil {
		return events.Session{}, err
	}
	if err := checkID("message", message); err != nil {
		return events.Session{}, err
	}
	var s events.Session
	err := c.call(ctx, events.OpSessionRestore, events.SessionRestore{Caller: p.Caller(), SessionID: id, MessageID: message}, &s)
	return s, err
}

// Runs lists a session's runs, oldest first.
func (c *Chats) Runs(ctx context.Context, p identity.Principal, id string, limit int) ([]events.Run, error) {
	if _, err := c.Session(ctx, p, id); err != nil {
		return nil, err
	}
	var out []events.Run
	err := c.call(ctx, events.OpRunsList, events.RunList{Caller: p.Caller(), SessionID: id, Limit: limit}, &out)
	return out, err
}

// RunEvents pages through a run's stored events.
func (c *Chats) RunEvents(ctx context.Context, p identity.Principal, id string, afterEpoch, afterSeq uint64, limit int) ([]events.StoredEvent, error) {
	if _, err := c.Run(ctx, p, id); err != nil {
		return nil, err
	}
	var out []events.StoredEvent
	err := c.call(ctx, events.OpRunEvents, events.RunEvents{Caller: p.Caller(), RunID: id,
		AfterEpoch: afterEpoch, AfterSeq: afterSeq, Limit: limit}, &out)
	return out, err
}

// Snapshot returns the state a (re)joining client starts from.
func (c *Chats) Snapshot(ctx context.Context, p identity.Principal, id string) (events.Snapshot, error) {
	var s events.Snapshot
	if err := checkID("session", id); err != nil {
		return s, err
	}
	if err := c.call(ctx, events.OpSnapshot, events.SessionRef{Caller: p.Caller(), SessionID: id}, &s); err != nil {
		return s, err
	}
	if err := c.canUse(ctx, p, s.Session.ProjectID, "session", id); err != nil {
		return events.Snapshot{}, err
	}
	c.homes.put(p.TenantID, id, s.Session.ProjectID)
	return s, nil
}

// Cancel cancels a run of a session (its active run when runID is empty),
// returning streammgr's acknowledgement as it came.
func (c *Chats) Cancel(ctx context.Context, p identity.Principal, session, runID string) (json.RawMessage, error) {
	return c.control(ctx, p, events.OpCancel, session, runID)
}

// Interrupt asks a run of a session to stop softly.
func (c *Chats) Interrupt(ctx context.Context, p identity.Principal, session, runID string) (json.RawMessage, error) {
	return c.control(ctx, p, events.OpInterrupt, session, runID)
}

func (c *Chats) control(ctx context.Context, p identity.Principal, op, session, runID string) (json.RawMessage, error) {
	if err := c.access(ctx, p, session); err != nil {
		return nil, err
	}
	if runID != "" && events.ValidToken(runID) != nil {
		return nil, apierr.New(apierr.ErrInvalid, "runId: %q is not a run id", runID)
	}
	var out json.RawMessage
	err := c.call(ctx, op, events.RunControl{Caller: p.Caller(), SessionID: session, RunID: runID}, &out)
	return out, err
}

// Answer answers a parked question or permission prompt of a session's run.
func (c *Chats) Answer(ctx context.Context, p identity.Principal, session string, a api.Answer) (json.RawMessage, error) {
	if err := c.access(ctx, p, session); err != nil {
		return nil, err
	}
	if err := checkAnswer(a); err != nil {
		return nil, err
	}
	var out json.RawMessage
	err := c.call(ctx, events.OpAnswer, events.AnswerRequest{Caller: p.Caller(), SessionID: session, RunID: a.RunID,
		ToolUseID: a.ToolUseID, Answers: a.Answers, Decision: a.Decision, Message: a.Message}, &out)
	return out, err
}

// Usage sums the tenant's recorded runs (admins) or the caller's own
// (members): req's tenant and user come from p.
func (c *Chats) Usage(ctx context.Context, p identity.Principal, req events.UsageRequest) (events.UsageReply, error) {
	req.Caller = p.Caller()
	if !p.IsAdmin() {
		req.OnlyUser = p.UserID
	}
	var out events.UsageReply
	err := c.call(ctx, events.OpUsage, req, &out)
	return out, err
}

// Budgets returns p's tenant's budgets with what it spent in each one's
// period (streammgr refuses anyone but a tenant admin).
func (c *Chats) Budgets(ctx context.Context, p identity.Principal) (events.BudgetsReply, error) {
	var out events.BudgetsReply
	err := c.call(ctx, events.OpBudgets, events.BudgetsRequest{Caller: p.Caller()}, &out)
	return out, err
}

// AuditPage returns a page of streammgr's part of p's tenant's audit log
// (budgets and limits).
func (c *Chats) AuditPage(ctx context.Context, p identity.Principal, q events.AuditQuery) ([]events.AuditEntry, error) {
	q.Caller = p.Caller()
	var out events.AuditPage
	err := c.call(ctx, events.OpAuditList, q, &out)
	return out.Entries, err
}
