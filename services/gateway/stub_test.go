package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/gateway/internal/chats"
)

// stubStreammgr stands in for streammgr, which is written in parallel: it
// serves every svc.streammgr.* endpoint the gateway calls, in memory, scoped
// by Caller.TenantID as the real one must be (another tenant's session or
// run is not found), and records the Caller of every request so tests can
// check the gateway always forwards the key's identity.
type stubStreammgr struct {
	js jetstream.JetStream

	mu       sync.Mutex
	sessions map[string]*stubSession
	runs     map[string]*stubRun
	calls    []stubCall
	// lastPrompt is the prompt of the last start, as it arrived.
	lastPrompt []json.RawMessage
}

type stubSession struct {
	tenant   string
	s        events.Session
	messages []events.MessageRow
}

type stubRun struct {
	tenant string
	r      events.Run
}

type stubCall struct {
	op     string
	caller events.Caller
}

func startStub(t *testing.T, nc *nats.Conn, js jetstream.JetStream) *stubStreammgr {
	t.Helper()
	st := &stubStreammgr{js: js, sessions: map[string]*stubSession{}, runs: map[string]*stubRun{}}
	m, err := micro.AddService(nc, micro.Config{Name: "streammgr", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServer(t.Context(), nc, m, testKeys.Verifier())
	t.Cleanup(srv.Stop)
	fail := func(err error) { t.Errorf("stub streammgr: %v", err) }
	add := func(op string, h svc.Endpoint) {
		subject := chats.Subject(op)
		if err := m.AddEndpoint(strings.ReplaceAll(op, ".", "-"), srv.Bind(h), micro.WithEndpointSubject(subject)); err != nil {
			t.Fatal(err)
		}
	}
	add(events.OpSessionCreate, svc.Handler(fail, st.createSession))
	add(events.OpSessionGet, svc.Handler(fail, st.getSession))
	add(events.OpSessionList, svc.Handler(fail, st.listSessions))
	add(events.OpSessionUpdate, svc.Handler(fail, st.updateSession))
	add(events.OpSessionDelete, svc.Handler(fail, st.deleteSession))
	add(events.OpMessagesList, svc.Handler(fail, st.listMessages))
	add(events.OpStart, svc.Handler(fail, st.start))
	add(events.OpRunsList, svc.Handler(fail, st.listRuns))
	add(events.OpRunGet, svc.Handler(fail, st.getRun))
	add(events.OpRunEvents, svc.Handler(fail, st.runEvents))
	add(events.OpRunRetry, svc.Handler(fail, st.retryRun))
	add(events.OpSnapshot, svc.Handler(fail, st.snapshot))
	add(events.OpCancel, svc.Handler(fail, st.control(events.RunCancelling)))
	add(events.OpInterrupt, svc.Handler(fail, st.control(events.RunRunning)))
	add(events.OpAnswer, svc.Handler(fail, st.answer))
	return st
}

func (st *stubStreammgr) record(op string, c events.Caller) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.calls = append(st.calls, stubCall{op, c})
}

// takeCalls returns the calls recorded since the last take.
func (st *stubStreammgr) takeCalls() []stubCall {
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.calls
	st.calls = nil
	return c
}

// session returns the caller's session: the tenant scoping streammgr does.
// st.mu is held.
func (st *stubStreammgr) session(c events.Caller, id string) (*stubSession, error) {
	s, ok := st.sessions[id]
	if !ok || s.tenant != c.TenantID {
		return nil, svc.NotFound("session %s not found", id)
	}
	return s, nil
}

func (st *stubStreammgr) run(c events.Caller, id string) (*stubRun, error) {
	r, ok := st.runs[id]
	if !ok || r.tenant != c.TenantID {
		return nil, svc.NotFound("run %s not found", id)
	}
	return r, nil
}

func (st *stubStreammgr) createSession(_ context.Context, req events.SessionCreate) (events.Session, error) {
	st.record(events.OpSessionCreate, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now().UTC()
	engine := req.Engine
	if engine == "" {
		engine = events.EngineScripted
	}
	s := &stubSession{tenant: req.TenantID, s: events.Session{ID: uuid.NewString(), ProjectID: req.ProjectID, Title: req.Title,
		Engine: engine, Model: req.Model, ProfileID: req.ProfileID, CreatedBy: req.UserID, CreatedAt: now, UpdatedAt: now,
		BaseSnapshot: req.BaseSnapshot, HeadSnapshot: req.BaseSnapshot}}
	st.sessions[s.s.ID] = s
	return s.s, nil
}

func (st *stubStreammgr) getSession(_ context.Context, req events.SessionRef) (events.Session, error) {
	st.record(events.OpSessionGet, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.session(req.Caller, req.SessionID)
	if err != nil {
		return events.Session{}, err
	}
	return s.s, nil
}

func (st *stubStreammgr) listSessions(_ context.Context, req events.SessionList) ([]events.Session, error) {
	st.record(events.OpSessionList, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []events.Session
	for _, s := range st.sessions {
		if s.tenant == req.TenantID && s.s.ProjectID == req.ProjectID &&
			strings.Contains(strings.ToLower(s.s.Title), strings.ToLower(req.Query)) {
			out = append(out, s.s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	if req.Limit > 0 && len(out) > req.Limit {
		out = out[:req.Limit]
	}
	return out, nil
}

func (st *stubStreammgr) updateSession(_ context.Context, req events.SessionUpdate) (events.Session, error) {
	st.record(events.OpSessionUpdate, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.session(req.Caller, req.SessionID)
	if err != nil {
		return events.Session{}, err
	}
	if req.Title != nil {
		s.s.Title = *req.Title
	}
	if req.Model != nil {
		s.s.Model = *req.Model
	}
	return s.s, nil
}

func (st *stubStreammgr) deleteSession(_ context.Context, req events.SessionRef) (struct{}, error) {
	st.record(events.OpSessionDelete, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := st.session(req.Caller, req.SessionID); err != nil {
		return struct{}{}, err
	}
	delete(st.sessions, req.SessionID)
	return struct{}{}, nil
}

func (st *stubStreammgr) listMessages(_ context.Context, req events.MessageList) ([]events.MessageRow, error) {
	st.record(events.OpMessagesList, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.session(req.Caller, req.SessionID)
	if err != nil {
		return nil, err
	}
	rows := s.messages
	for i, m := range rows {
		if m.RowID == req.AfterRow {
			rows = rows[i+1:]
			break
		}
	}
	if req.Limit > 0 && len(rows) > req.Limit {
		rows = rows[:req.Limit]
	}
	return rows, nil
}

// startRequest is events.StartTurnRequest with its prompt left raw:
// encoding/json cannot decode the []events.Block interface slice, so
// svc.Handler cannot take a StartTurnRequest as it is.
type startRequest struct {
	events.Caller
	SessionID       string            `json:"sessionId"`
	Prompt          []json.RawMessage `json:"prompt"`
	Engine          string            `json:"engine,omitempty"`
	Model           string            `json:"model,omitempty"`
	Provider        string            `json:"provider,omitempty"`
	AccountID       string            `json:"accountId,omitempty"`
	Effort          string            `json:"reasoningEffort,omitempty"`
	ProfileID       *string           `json:"profileId,omitempty"`
	ClientRequestID string            `json:"clientRequestId,omitempty"`
}

// start creates a run and, like the real pipeline would, publishes the
// turn's chat events on CHAT: the run state, a streamed answer, completion.
func (st *stubStreammgr) start(ctx context.Context, req startRequest) (events.StartTurnReply, error) {
	st.record(events.OpStart, req.Caller)
	if len(req.Prompt) == 0 {
		return events.StartTurnReply{}, svc.Invalid("prompt: empty")
	}
	first, err := events.DecodeBlock(req.Prompt[0])
	if err != nil {
		return events.StartTurnReply{}, svc.Invalid("prompt: %v", err)
	}
	st.mu.Lock()
	s, err := st.session(req.Caller, req.SessionID)
	if err != nil {
		st.mu.Unlock()
		return events.StartTurnReply{}, err
	}
	st.lastPrompt = req.Prompt
	run := &stubRun{tenant: req.TenantID, r: events.Run{ID: uuid.NewString(), SessionID: s.s.ID, ProjectID: s.s.ProjectID,
		State: events.RunCompleted, Engine: s.s.Engine, Epoch: 1, QueuedAt: time.Now().UTC()}}
	st.runs[run.r.ID] = run
	row := events.MessageRow{RowID: uuid.NewString(), RunID: run.r.ID, CreatedAt: time.Now().UTC(),
		Message: json.RawMessage(`{"type":"user","content":[]}`)}
	s.messages = append(s.messages, row)
	session := s.s
	st.mu.Unlock()
	subject, _ := events.ChatSubject(req.TenantID, session.ID)
	text := ""
	if tb, ok := first.(events.TextBlock); ok {
		text = tb.Text
	}
	for i, data := range []events.ChatData{
		events.ChatRunState{State: events.RunRunning},
		events.ChatPartial{EventType: events.PartialStart},
		events.ChatPartial{EventType: events.PartialUpdate, DeltaText: "echo: " + text},
		events.ChatPartial{EventType: events.PartialEnd},
		events.ChatRunState{State: events.RunCompleted},
	} {
		ev := events.ChatEvent{Type: data.ChatType(), ChatSessionID: session.ID, ProjectID: session.ProjectID, RunID: run.r.ID,
			Source: &events.SourceRef{Run: run.r.ID, Epoch: 1, Seq: uint64(i + 1)}, Timestamp: time.Now().UTC(), Data: data}
		b, err := json.Marshal(ev)
		if err != nil {
			return events.StartTurnReply{}, err
		}
		if _, err := st.js.Publish(ctx, subject, b, jetstream.WithMsgID(ev.MsgID(0))); err != nil {
			return events.StartTurnReply{}, fmt.Errorf("publish chat event: %w", err)
		}
	}
	return events.StartTurnReply{RunID: run.r.ID, UserMessageRowID: row.RowID}, nil
}

func (st *stubStreammgr) listRuns(_ context.Context, req events.RunList) ([]events.Run, error) {
	st.record(events.OpRunsList, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := st.session(req.Caller, req.SessionID); err != nil {
		return nil, err
	}
	var out []events.Run
	for _, r := range st.runs {
		if r.tenant == req.TenantID && r.r.SessionID == req.SessionID {
			out = append(out, r.r)
		}
	}
	return out, nil
}

func (st *stubStreammgr) getRun(_ context.Context, req events.RunRef) (events.Run, error) {
	st.record(events.OpRunGet, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	r, err := st.run(req.Caller, req.RunID)
	if err != nil {
		return events.Run{}, err
	}
	return r.r, nil
}

// retryRun refuses, as streammgr does, a run that is not lost.
func (st *stubStreammgr) retryRun(_ context.Context, req events.RunRef) (events.StartTurnReply, error) {
	st.record(events.OpRunRetry, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	r, err := st.run(req.Caller, req.RunID)
	if err != nil {
		return events.StartTurnReply{}, err
	}
	if r.r.State != events.RunLost {
		return events.StartTurnReply{}, svc.Conflict("run %s is %s: only a lost run can be retried", r.r.ID, r.r.State)
	}
	return events.StartTurnReply{RunID: uuid.NewString(), Queued: true}, nil
}

func (st *stubStreammgr) runEvents(_ context.Context, req events.RunEvents) ([]events.StoredEvent, error) {
	st.record(events.OpRunEvents, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := st.run(req.Caller, req.RunID); err != nil {
		return nil, err
	}
	return []events.StoredEvent{{Epoch: 1, Seq: 1, Type: "run_state", Output: json.RawMessage(`{"type":"run_state","state":"running"}`)}}, nil
}

// snapshot's cursor is CHAT's last sequence when it was taken: everything
// up to it is reflected in the snapshot.
func (st *stubStreammgr) snapshot(ctx context.Context, req events.SessionRef) (events.Snapshot, error) {
	st.record(events.OpSnapshot, req.Caller)
	info, err := st.js.Stream(ctx, events.StreamChat)
	if err != nil {
		return events.Snapshot{}, err
	}
	si, err := info.Info(ctx)
	if err != nil {
		return events.Snapshot{}, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.session(req.Caller, req.SessionID)
	if err != nil {
		return events.Snapshot{}, err
	}
	return events.Snapshot{Session: s.s, Messages: append([]events.MessageRow{}, s.messages...), Cursor: si.State.LastSeq}, nil
}

func (st *stubStreammgr) control(state events.RunStateName) func(context.Context, events.RunControl) (events.ControlReply, error) {
	return func(_ context.Context, req events.RunControl) (events.ControlReply, error) {
		st.record("control", req.Caller)
		st.mu.Lock()
		defer st.mu.Unlock()
		if _, err := st.session(req.Caller, req.SessionID); err != nil {
			return events.ControlReply{}, err
		}
		if req.RunID != "" {
			if r, err := st.run(req.Caller, req.RunID); err != nil || r.r.SessionID != req.SessionID {
				return events.ControlReply{}, svc.NotFound("run %s not found in session %s", req.RunID, req.SessionID)
			}
		}
		return events.ControlReply{Accepted: true, State: state}, nil
	}
}

func (st *stubStreammgr) answer(_ context.Context, req events.AnswerRequest) (events.ControlReply, error) {
	st.record(events.OpAnswer, req.Caller)
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := st.session(req.Caller, req.SessionID); err != nil {
		return events.ControlReply{}, err
	}
	return events.ControlReply{Accepted: true, State: events.RunRunning}, nil
}

// setHead makes snapshot the one the session's next turn on HEAD starts
// from, as a finished turn would.
func (st *stubStreammgr) setHead(session, snapshot string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sessions[session].s.HeadSnapshot = snapshot
}

// setRunSnapshots records the snapshot a run started from and the one it
// left ("" for none).
func (st *stubStreammgr) setRunSnapshots(run, start, left string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r := st.runs[run]
	r.r.StartSnapshot, r.r.Snapshot = start, nil
	if left != "" {
		r.r.Snapshot = &events.RunSnapshot{ID: left}
	}
}
