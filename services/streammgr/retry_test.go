package streammgr

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/store"
)

// finish injects run's terminal state and waits until it is stored.
func (s *admissionStack) finish(p party, session, run string, st events.RunState) {
	s.t.Helper()
	s.inject(p, session, run, st, "test:"+run+":"+string(st.State))
	s.waitFor("run "+run+" ended "+string(st.State), func() bool {
		r, err := store.LoadRun(s.ctx, s.db, run)
		return err == nil && r.State == st.State
	})
}

// headPrompts returns the texts of the user messages on the path from the
// session's HEAD to its root, oldest first.
func (s *admissionStack) headPrompts(session string) []string {
	s.t.Helper()
	rows, err := s.db.Query(s.ctx, `WITH RECURSIVE path AS (
			SELECT m.id, m.parent_message_id, m.type, m.data, 1 AS depth FROM streammgr.messages m
			JOIN streammgr.chat_sessions c ON c.head_message_id = m.id WHERE c.id = $1
			UNION ALL
			SELECT m.id, m.parent_message_id, m.type, m.data, p.depth + 1 FROM streammgr.messages m
			JOIN path p ON m.id = p.parent_message_id)
		SELECT data->'content'->0->>'text' FROM path WHERE type = 'user' ORDER BY depth DESC`, session)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, text)
	}
	return out
}

func (s *admissionStack) parentOf(message string) string {
	s.t.Helper()
	var parent string
	if err := s.db.QueryRow(s.ctx, `SELECT coalesce(parent_message_id::text, '') FROM streammgr.messages WHERE id = $1`,
		message).Scan(&parent); err != nil {
		s.t.Fatal(err)
	}
	return parent
}

var lostState = events.RunState{State: events.RunLost, Reason: "lease expired", ErrorKind: events.KindCrashed}

// A lost run is retried as a new run of its session: same prompt, from the
// snapshot the lost turn started from, its user message a sibling of the
// lost one (HEAD holds the prompt once), queued behind an active run; a
// second retry returns the first; only a lost run is retried, and only by
// its tenant.
func TestRetryLostRun(t *testing.T) {
	s, p := startAdmission(t, testConfig()), newParty()
	var sess events.Session
	if err := s.try(events.OpSessionCreate, events.SessionCreate{Caller: p.Caller, ProjectID: p.project,
		Engine: events.EngineCodex, BaseSnapshot: "snap-base"}, &sess); err != nil {
		t.Fatal(err)
	}
	first := s.mustSend(p, sess.ID, "first")
	s.finish(p, sess.ID, first.RunID, events.RunState{State: events.RunCompleted, Snapshot: &events.RunSnapshot{ID: "snap-1"}})
	second := s.mustSend(p, sess.ID, "second")
	s.finish(p, sess.ID, second.RunID, lostState)

	// Only a lost run: a completed one is a conflict naming its state.
	var reply events.StartTurnReply
	err := s.try(events.OpRunRetry, events.RunRef{Caller: p.Caller, RunID: first.RunID}, &reply)
	if e := wantStatus(t, err, http.StatusConflict); !strings.Contains(e.Message, "completed") {
		t.Errorf("conflict %q does not name the run's state", e.Message)
	}
	// Another tenant's caller does not find the run.
	err = s.try(events.OpRunRetry, events.RunRef{Caller: newParty().Caller, RunID: second.RunID}, &reply)
	wantStatus(t, err, http.StatusNotFound)

	// A turn sent after the loss is active: the retry waits behind it.
	third := s.mustSend(p, sess.ID, "third")
	if err := s.try(events.OpRunRetry, events.RunRef{Caller: p.Caller, RunID: second.RunID}, &reply); err != nil {
		t.Fatal(err)
	}
	if !reply.Queued || reply.RunID == "" || reply.RunID == second.RunID {
		t.Fatalf("retry = %+v, want a new run queued behind the active one", reply)
	}
	var again events.StartTurnReply
	if err := s.try(events.OpRunRetry, events.RunRef{Caller: p.Caller, RunID: second.RunID}, &again); err != nil {
		t.Fatal(err)
	}
	if again.RunID != reply.RunID {
		t.Fatalf("second retry made run %s, want the first retry %s", again.RunID, reply.RunID)
	}
	s.finish(p, sess.ID, third.RunID, events.RunState{State: events.RunCompleted, Snapshot: &events.RunSnapshot{ID: "snap-3"}})
	s.waitFor("the retry was dispatched", func() bool { return s.run(reply.RunID).DispatchedAt != nil })

	retry, lost := s.run(reply.RunID), s.run(second.RunID)
	if retry.RetryOf != lost.ID || retry.Job.Snapshot != "snap-1" || textOf(retry.Job.Prompt) != "second" {
		t.Errorf("retry: retryOf %q, snapshot %q, prompt %q; want %s, snap-1 (the lost turn's start), second",
			retry.RetryOf, retry.Job.Snapshot, textOf(retry.Job.Prompt), lost.ID)
	}
	if retry.Engine != lost.Engine || retry.Model != lost.Model || retry.Job.Engine != lost.Job.Engine {
		t.Errorf("retry engine %s/%s, want the lost run's %s/%s", retry.Engine, retry.Model, lost.Engine, lost.Model)
	}
	if got, want := s.parentOf(retry.UserMessageID), s.parentOf(lost.UserMessageID); got == "" || got != want {
		t.Errorf("retry's user message parent %q, want the lost one's %q (a sibling)", got, want)
	}
	if got := s.headPrompts(sess.ID); len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Errorf("HEAD's prompts = %q, want [first second]: the retried prompt once", got)
	}
	// The database holds one retry per lost run, whoever asks.
	dup := retry
	dup.ID = uuid.NewString()
	err = pgx.BeginFunc(s.ctx, s.db, func(tx pgx.Tx) error { return store.InsertRun(s.ctx, tx, dup) })
	if err == nil || !strings.Contains(err.Error(), "runs_by_retry_of") {
		t.Errorf("a second run retrying %s was stored (err %v)", lost.ID, err)
	}
	var pub events.Run
	if err := s.try(events.OpRunGet, events.RunRef{Caller: p.Caller, RunID: retry.ID}, &pub); err != nil {
		t.Fatal(err)
	}
	if pub.RetryOf != lost.ID || pub.StartSnapshot != "snap-1" {
		t.Errorf("runs.get: retryOf %q, startSnapshot %q", pub.RetryOf, pub.StartSnapshot)
	}
}

// With RetryLost a run that becomes lost is retried once by itself; a lost
// retry is not retried again.
func TestRetryLostAutomatically(t *testing.T) {
	cfg := testConfig()
	cfg.RetryLost = true
	s, p := startAdmission(t, cfg), newParty()
	session := s.session(p)
	first := s.mustSend(p, session, "only")
	s.finish(p, session, first.RunID, lostState)

	var retry string
	s.waitFor("the lost run was retried", func() bool {
		err := s.db.QueryRow(s.ctx, `SELECT id::text FROM streammgr.runs WHERE retry_of = $1 AND dispatched_at IS NOT NULL`,
			first.RunID).Scan(&retry)
		return err == nil
	})
	if got := textOf(s.run(retry).Job.Prompt); got != "only" {
		t.Errorf("retry prompt %q, want the lost one's", got)
	}
	s.finish(p, session, retry, lostState)
	time.Sleep(time.Second) // the writer had its chance to retry the retry
	var n int
	if err := s.db.QueryRow(s.ctx, `SELECT count(*) FROM streammgr.runs WHERE session_id = $1`, session).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d runs, want 2: the lost run and its one retry", n)
	}
	if got := s.headPrompts(session); len(got) != 1 || got[0] != "only" {
		t.Errorf("HEAD's prompts = %q, want [only]", got)
	}
}

// wantStatus fails unless err is an API error of status.
func wantStatus(t *testing.T, err error, status int) *events.APIError {
	t.Helper()
	var apiErr *events.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != status {
		t.Fatalf("err = %v, want a %d", err, status)
	}
	return apiErr
}
