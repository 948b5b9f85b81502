package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/streammgr"
	"clopen.dev/services/streammgr/internal/router"
	"clopen.dev/services/streammgr/internal/store"
)

// fixture is a session with one queued run.
type fixture struct {
	db                   *pgxpool.Pool
	tenant, session, run string
	queuedAt             time.Time
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	f := fixture{db: pgtest.New(t, streammgr.Schema), tenant: uuid.NewString(), session: uuid.NewString(),
		run: uuid.NewString(), queuedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if _, err := store.CreateSession(ctx, f.db, f.tenant, f.session, "", events.SessionCreate{ProjectID: uuid.NewString()}); err != nil {
		t.Fatal(err)
	}
	f.inTx(t, func(tx pgx.Tx) error {
		return store.InsertRun(ctx, tx, store.RunRow{ID: f.run, Tenant: f.tenant, SessionID: f.session,
			ProjectID: uuid.NewString(), Engine: events.EngineScripted, QueuedAt: f.queuedAt})
	})
	return f
}

func (f fixture) inTx(t *testing.T, fn func(pgx.Tx) error) {
	t.Helper()
	if err := pgx.BeginFunc(context.Background(), f.db, fn); err != nil {
		t.Fatal(err)
	}
}

// apply routes outs as a worker emitting them at the given times would have
// them routed, and applies every outcome in one batch.
func (f fixture) apply(t *testing.T, outs []events.Output, at []time.Time) {
	t.Helper()
	st := router.New(router.Run{ID: f.run, Tenant: f.tenant, SessionID: f.session, Engine: events.EngineScripted,
		State: events.RunQueued, LastSeq: 1}, nil)
	var ps []store.Projected
	for i, o := range outs {
		out := st.Route(events.Envelope{Tenant: f.tenant, Run: f.run, Session: f.session, Epoch: 1, Seq: uint64(i + 1),
			EmittedAt: at[i], Output: o})
		ps = append(ps, store.Projected{Tenant: f.tenant, Session: f.session, Run: f.run, Out: out})
	}
	f.inTx(t, func(tx pgx.Tx) error {
		_, err := store.Apply(context.Background(), tx, ps, nil)
		return err
	})
}

// TestAMessageSavedAndRewrittenInOneBatchKeepsTheRewrite: the turn's last
// message and the result that backfills its stop reason, committed in one
// batch, leave the stored message with the stop reason (the rewrite used to
// run before the insert, and was lost).
func TestAMessageSavedAndRewrittenInOneBatchKeepsTheRewrite(t *testing.T) {
	f := newFixture(t)
	now := time.Now().UTC()
	last := events.AssistantMessage{MessageBase: events.MessageBase{MessageID: "m-1", SessionID: "eng-1"},
		Content: []events.Block{events.TextBlock{Text: "Thanks, I will go with your choice."}}}
	result := events.Result{Subtype: events.ResultSuccess, SessionID: "eng-1", NumTurns: 1, StopReason: "end_turn"}
	f.apply(t, []events.Output{last, result}, []time.Time{now, now})
	rows, err := store.ListMessages(context.Background(), f.db, f.tenant, f.session, "", 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("messages = %d, %v; want 1", len(rows), err)
	}
	o, err := events.DecodeOutput(rows[0].Message)
	if err != nil {
		t.Fatal(err)
	}
	if got := o.(events.AssistantMessage).StopReason; got != events.StopEndTurn {
		t.Errorf("stored stop reason = %q, want %q", got, events.StopEndTurn)
	}
}
