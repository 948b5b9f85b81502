package streammgr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// admissionStack is a streammgr on an embedded NATS and a fresh database,
// with no workers: a dispatched run stays dispatched until the test ends it.
type admissionStack struct {
	t   *testing.T
	ctx context.Context
	nc  *nats.Conn
	js  jetstream.JetStream
	db  *pgxpool.Pool
}

func startAdmission(t *testing.T, cfg Config) *admissionStack {
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	smc, _ := natstest.Connect(t, ns)
	db := pgtest.New(t, Schema)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Deps{NATS: smc, DB: db, Logger: logging.Discard(), Health: health.New()})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &admissionStack{t: t, ctx: ctx, nc: nc, js: js, db: db}
}

type party struct {
	events.Caller
	project string
}

func newParty() party {
	return party{Caller: events.Caller{TenantID: uuid.NewString(), UserID: uuid.NewString()}, project: uuid.NewString()}
}

func (s *admissionStack) try(op string, req, resp any) error {
	subject, _ := events.ServiceSubject(Name, op)
	for {
		err := svc.Call(asCaller(s.t, s.ctx, req), s.nc, subject, req, resp)
		var noResp *svc.NoResponders
		if !errors.As(err, &noResp) || s.ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond) // streammgr is still starting
	}
}

func (s *admissionStack) session(p party) string {
	s.t.Helper()
	var out events.Session
	if err := s.try(events.OpSessionCreate, events.SessionCreate{Caller: p.Caller, ProjectID: p.project}, &out); err != nil {
		s.t.Fatal(err)
	}
	return out.ID
}

func (s *admissionStack) send(p party, session, text string) (events.StartTurnReply, error) {
	var r events.StartTurnReply
	err := s.try(events.OpStart, events.StartTurnRequest{Caller: p.Caller, SessionID: session,
		Prompt: []events.Block{events.TextBlock{Text: text}}}, &r)
	return r, err
}

func (s *admissionStack) mustSend(p party, session, text string) events.StartTurnReply {
	s.t.Helper()
	r, err := s.send(p, session, text)
	if err != nil {
		s.t.Fatalf("send %q: %v", text, err)
	}
	return r
}

// end ends a run as its worker would, with a terminal event.
func (s *admissionStack) end(p party, r store.RunRow) {
	s.t.Helper()
	s.inject(p, r.SessionID, r.ID, events.RunState{State: events.RunCompleted}, "test:"+r.ID+":end")
}

// inject publishes st on run's subject, as a worker or the reaper does.
func (s *admissionStack) inject(p party, session, run string, st events.RunState, msgID string) {
	s.t.Helper()
	b := bus{js: s.js, log: logging.Discard()}
	if err := b.inject(s.ctx, p.TenantID, session, run, st, msgID); err != nil {
		s.t.Fatal(err)
	}
}

func (s *admissionStack) run(id string) store.RunRow {
	s.t.Helper()
	r, err := store.LoadRun(s.ctx, s.db, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// active returns the tenant's dispatched unfinished runs.
func (s *admissionStack) active(p party) []string {
	s.t.Helper()
	rows, err := s.db.Query(s.ctx, `SELECT id::text FROM streammgr.runs WHERE tenant_id = $1 AND dispatched_at IS NOT NULL
		AND state NOT IN ('completed', 'failed', 'cancelled', 'lost') ORDER BY dispatched_at`, p.TenantID)
	if err != nil {
		s.t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	return ids
}

func (s *admissionStack) waitFor(what string, cond func() bool) {
	s.t.Helper()
	for !cond() {
		if s.ctx.Err() != nil {
			s.t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func limit(n int) *int { return &n }

// TestAdmissionKeepsATenantToItsLimit: tenant A (its own limit of 2) sends
// ten turns on ten sessions: two are dispatched, eight are held and told why
// (a run-state event reaches the session's clients); tenant B, on the
// default limit of 3, starts at once while A is saturated, and its fourth
// turn is held. As A's runs end, its held runs are admitted in the order
// they were sent, never more than two active at once.
func TestAdmissionKeepsATenantToItsLimit(t *testing.T) {
	cfg := testConfig()
	cfg.TenantMaxConcurrent = 3
	s := startAdmission(t, cfg)
	a, b := newParty(), newParty()
	if err := SetTenantLimits(s.ctx, s.db, a.TenantID, TenantLimits{MaxConcurrent: limit(2)}); err != nil {
		t.Fatal(err)
	}
	var runs []string
	var replies []events.StartTurnReply
	var sessions []string
	for i := range 10 {
		sessions = append(sessions, s.session(a))
		r := s.mustSend(a, sessions[i], fmt.Sprint("turn ", i))
		runs, replies = append(runs, r.RunID), append(replies, r)
	}
	for i, r := range replies {
		if wantQueued := i >= 2; r.Queued != wantQueued || (wantQueued && !strings.Contains(r.QueuedReason, "limit of 2")) {
			t.Errorf("turn %d: reply %+v, want queued=%v with the tenant's limit as the reason", i, r, wantQueued)
		}
	}
	// The reason reaches the held session's clients as a run-state event.
	subject, _ := events.ChatSubject(a.TenantID, sessions[9])
	c, err := s.js.OrderedConsumer(s.ctx, events.StreamChat, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatalf("no chat event for the held session: %v", err)
	}
	ev, err := events.DecodeChatEvent(msg.Data())
	if err != nil {
		t.Fatal(err)
	}
	if rs, ok := ev.Data.(events.ChatRunState); !ok || ev.RunID != runs[9] || rs.State != events.RunQueued ||
		rs.Reason != "tenant at its limit of 2 concurrent runs" {
		t.Errorf("held session's first chat event = %s %+v, want run-state queued with the reason", ev.Type, ev.Data)
	}

	// B, on the default, is not held behind A.
	var bRuns []events.StartTurnReply
	for i := range 4 {
		bRuns = append(bRuns, s.mustSend(b, s.session(b), fmt.Sprint("b ", i)))
	}
	for i, r := range bRuns {
		if r.Queued != (i == 3) {
			t.Errorf("tenant B's turn %d: queued=%v, want %v (default limit 3)", i, r.Queued, i == 3)
		}
	}
	if got := s.run(bRuns[0].RunID); got.DispatchedAt == nil {
		t.Errorf("tenant B's first turn was not dispatched while A was saturated")
	}

	var admitted []string
	admitted = append(admitted, s.active(a)...)
	for len(admitted) < len(runs) {
		act := s.active(a)
		if len(act) > 2 {
			t.Fatalf("tenant A has %d active runs, its limit is 2", len(act))
		}
		s.end(a, s.run(act[0]))
		s.waitFor("A's next held run is admitted", func() bool {
			now := s.active(a)
			if len(now) > 2 {
				t.Fatalf("tenant A has %d active runs, its limit is 2", len(now))
			}
			return len(now) == 2 && now[1] != act[1] || len(admitted)+len(now)-1 == len(runs) && now[0] != act[0]
		})
		now := s.active(a)
		admitted = append(admitted, now[len(now)-1])
	}
	for i := range runs {
		if admitted[i] != runs[i] {
			t.Fatalf("admission order %v, want the order sent %v", admitted, runs)
		}
	}
}

// TestATenantsFullQueueRefusesTheTurn: a turn that would wait while its
// tenant already has as many waiting as it may is refused with 429
// tenant_queue_full and a Retry-After; a turn that dispatches at once is not.
func TestATenantsFullQueueRefusesTheTurn(t *testing.T) {
	s := startAdmission(t, testConfig())
	a := newParty()
	if err := SetTenantLimits(s.ctx, s.db, a.TenantID, TenantLimits{MaxConcurrent: limit(1), MaxQueued: limit(2)}); err != nil {
		t.Fatal(err)
	}
	first := s.session(a)
	s.mustSend(a, first, "runs")
	s.mustSend(a, first, "queued behind the session's run")
	s.mustSend(a, s.session(a), "held for admission")
	_, err := s.send(a, s.session(a), "one too many")
	var apiErr *events.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusTooManyRequests || apiErr.Code != "tenant_queue_full" || apiErr.RetryAfter <= 0 {
		t.Fatalf("send over the tenant's queue = %v (%+v), want 429 tenant_queue_full with a retry-after", err, apiErr)
	}
	if err := SetTenantLimits(s.ctx, s.db, a.TenantID, TenantLimits{MaxConcurrent: limit(0)}); err == nil {
		t.Error("a limit of 0 concurrent runs was accepted")
	}
	if err := SetTenantLimits(s.ctx, s.db, a.TenantID, TenantLimits{MaxQueued: limit(-1)}); err == nil {
		t.Error("a negative queue limit was accepted")
	}
}

// TestTheSweeperAdmitsAStrandedRun: a run ends in the database with nobody
// kicking the admitter (its streammgr died between the commit and the
// admission); the periodic sweep admits the tenant's held run all the same.
func TestTheSweeperAdmitsAStrandedRun(t *testing.T) {
	cfg := testConfig()
	cfg.TenantMaxConcurrent, cfg.SweepEvery = 1, 300*time.Millisecond
	s := startAdmission(t, cfg)
	a := newParty()
	first := s.mustSend(a, s.session(a), "runs")
	held := s.mustSend(a, s.session(a), "held")
	if !held.Queued {
		t.Fatal("the second turn was not held")
	}
	r := s.run(first.RunID)
	// What the writer commits when the run ends, without the kick after it.
	if _, err := s.db.Exec(s.ctx, `UPDATE streammgr.runs SET state = 'completed', ended_at = now() WHERE id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(s.ctx, `UPDATE streammgr.chat_sessions SET active_run_id = NULL WHERE id = $1`, r.SessionID); err != nil {
		t.Fatal(err)
	}
	s.waitFor("the sweeper admits the held run", func() bool { return s.run(held.RunID).DispatchedAt != nil })
}

// TestDeletingSessionsWithWaitingRuns: deleting a session whose turn is held
// (and another queued behind it) leaves no row of them, and nothing is held
// for the tenant afterwards; deleting the session of an active run frees its
// slot for the tenant's next held run.
func TestDeletingSessionsWithWaitingRuns(t *testing.T) {
	cfg := testConfig()
	cfg.TenantMaxConcurrent = 1
	s := startAdmission(t, cfg)
	a := newParty()
	busy, doomed, next := s.session(a), s.session(a), s.session(a)
	s.mustSend(a, busy, "runs")
	s.mustSend(a, doomed, "held")
	s.mustSend(a, doomed, "queued behind the held one")
	if err := s.try(events.OpSessionDelete, events.SessionRef{Caller: a.Caller, SessionID: doomed}, &events.Session{}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.db.QueryRow(s.ctx, `SELECT count(*) FROM streammgr.runs WHERE session_id = $1`, doomed).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d runs of the deleted session left (%v)", left, err)
	}
	if tenants, err := store.HeldTenants(s.ctx, s.db); err != nil || len(tenants) != 0 {
		t.Fatalf("held tenants after the deletion: %v (%v)", tenants, err)
	}
	waiting := s.mustSend(a, next, "held until the busy session goes")
	if err := s.try(events.OpSessionDelete, events.SessionRef{Caller: a.Caller, SessionID: busy}, &events.Session{}); err != nil {
		t.Fatal(err)
	}
	s.waitFor("the held run is admitted once the active run's session is deleted", func() bool {
		return s.run(waiting.RunID).DispatchedAt != nil
	})
}

// TestCancellingAHeldRunMovesItsSessionOn: a held run cancelled before it
// starts lets its session's next turn take its place in the tenant's queue.
func TestCancellingAHeldRunMovesItsSessionOn(t *testing.T) {
	cfg := testConfig()
	cfg.TenantMaxConcurrent = 1
	s := startAdmission(t, cfg)
	a := newParty()
	first := s.mustSend(a, s.session(a), "runs")
	sess := s.session(a)
	held := s.mustSend(a, sess, "held")
	behind := s.mustSend(a, sess, "behind it")
	var reply events.ControlReply
	if err := s.try(events.OpCancel, events.RunControl{Caller: a.Caller, SessionID: sess, RunID: held.RunID}, &reply); err != nil || !reply.Accepted {
		t.Fatalf("cancel the held run: %+v %v", reply, err)
	}
	s.end(a, s.run(first.RunID))
	s.waitFor("the turn behind the cancelled one is admitted", func() bool { return s.run(behind.RunID).DispatchedAt != nil })
}
