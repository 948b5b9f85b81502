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

func newFixture(t testing.TB) fixture {
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

// public is the fixture's run as clients see it.
func (f fixture) public(t *testing.T) events.Run {
	t.Helper()
	ctx := context.Background()
	row, err := store.LoadRun(ctx, f.db, f.run)
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.Public(ctx, f.db, row)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f fixture) inTx(t testing.TB, fn func(pgx.Tx) error) {
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

// TestRunTimingsNeverGoBackwards: queued ≤ dispatched ≤ claimed ≤ first
// output ≤ ended, whatever the clocks that stamped them say — a dispatch
// stamped before the queueing, a worker whose clock is behind streammgr's.
func TestRunTimingsNeverGoBackwards(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		dispatch             time.Duration // from the queueing
		claim, first, finish time.Duration
	}{
		{"clocks agree", time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond},
		{"dispatch stamped before the queueing", -time.Second, time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond},
		{"the worker's clock is behind", time.Millisecond, -5 * time.Second, -4 * time.Second, -3 * time.Second},
		{"events out of clock order", time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond, time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.inTx(t, func(tx pgx.Tx) error {
				return store.MarkDispatched(ctx, tx, store.RunRow{ID: f.run}, f.queuedAt.Add(tt.dispatch))
			})
			q := f.queuedAt
			f.apply(t, []events.Output{events.RunState{State: events.RunClaimed, Reason: "w"},
				events.SystemInit{SessionID: "eng-1"}, events.RunState{State: events.RunCompleted}},
				[]time.Time{q.Add(tt.claim), q.Add(tt.first), q.Add(tt.finish)})
			r := f.public(t)
			if r.DispatchedAt == nil || r.ClaimedAt == nil || r.FirstOutputAt == nil || r.EndedAt == nil {
				t.Fatalf("timings missing: %+v", r)
			}
			seq := []time.Time{r.QueuedAt, *r.DispatchedAt, *r.ClaimedAt, *r.FirstOutputAt, *r.EndedAt}
			for i := 1; i < len(seq); i++ {
				if seq[i].Before(seq[i-1]) {
					t.Errorf("timing %d (%s) is before timing %d (%s): queued, dispatched, claimed, first output, ended = %v",
						i, seq[i].Format(time.RFC3339Nano), i-1, seq[i-1].Format(time.RFC3339Nano), seq)
				}
			}
		})
	}
}

// TestMeteredUsageStored: the usage the worker metered, on the terminal
// run_state, is stored beside the agent's own report and read back apart
// from it; a run that reported none has null.
func TestMeteredUsageStored(t *testing.T) {
	now := time.Now().UTC()
	reported := events.TokenUsage{InputTokens: 1, OutputTokens: 1}
	metered := events.TokenUsage{InputTokens: 1200, OutputTokens: 340, CacheCreationInputTokens: 50, CacheReadInputTokens: 9000}
	for _, tt := range []struct {
		name string
		give *events.TokenUsage
	}{
		{"metered", &metered},
		{"not through the proxy", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.apply(t, []events.Output{events.RunState{State: events.RunRunning},
				events.Result{Subtype: events.ResultSuccess, SessionID: "eng-1", NumTurns: 1, Usage: reported},
				events.RunState{State: events.RunCompleted, MeteredUsage: tt.give}}, []time.Time{now, now, now})
			r := f.public(t)
			if r.Usage == nil || *r.Usage != reported {
				t.Errorf("usage = %+v, want the agent's report %+v", r.Usage, reported)
			}
			if (r.MeteredUsage == nil) != (tt.give == nil) || (tt.give != nil && *r.MeteredUsage != *tt.give) {
				t.Errorf("meteredUsage = %+v, want %+v", r.MeteredUsage, tt.give)
			}
		})
	}
}
