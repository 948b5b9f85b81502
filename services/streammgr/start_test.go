package streammgr

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// A start whose slash skill artifacts is slow to expand must not hold its
// session row locked meanwhile: the writer that commits that session's
// events commits every other session on it too, and would wait with them.
func TestSlowSkillExpansionDoesNotHoldUpTheWriter(t *testing.T) {
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	smc, _ := natstest.Connect(t, ns)
	db := pgtest.New(t, Schema)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// An artifacts service that answers an expansion only when told to.
	asked, release := make(chan struct{}, 1), make(chan struct{})
	s, err := micro.AddService(nc, micro.Config{Name: "artifacts", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServer(ctx, nc, s, testKeys.Verifier())
	defer srv.Stop()
	expand, _ := events.ServiceSubject(events.ArtifactsService, events.OpExpand)
	err = s.AddEndpoint("expand", srv.Bind(svc.Handler(nil, func(ctx context.Context, req events.ExpandRequest) (events.ExpandReply, error) {
		asked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return events.ExpandReply{ExpandedSkill: "review-pr", Prompt: []events.Block{events.TextBlock{Text: "expanded"}}}, nil
	}), bustoken.Dispatch), micro.WithEndpointSubject(expand))
	if err != nil {
		t.Fatal(err)
	}

	cfg := testConfig()
	cfg.Writers = 1 // both sessions on one writer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Deps{NATS: smc, DB: db, Logger: logging.Discard(), Health: health.New()})
	}()
	defer func() { cancel(); <-done }()

	tenant, project, user := uuid.NewString(), uuid.NewString(), uuid.NewString()
	caller := events.Caller{TenantID: tenant, UserID: user}
	call := func(op string, req, resp any) {
		t.Helper()
		callStreammgr(t, ctx, nc, op, req, resp)
	}
	session := func() string {
		var s events.Session
		call(events.OpSessionCreate, events.SessionCreate{Caller: caller, ProjectID: project, Engine: events.EngineCodex}, &s)
		return s.ID
	}
	start := func(session, text string) string {
		var r events.StartTurnReply
		call(events.OpStart, events.StartTurnRequest{Caller: caller, SessionID: session,
			Prompt: []events.Block{events.TextBlock{Text: text}}}, &r)
		return r.RunID
	}
	b := bus{js: js, log: logging.Discard()}
	cancelRun := func(session, run, id string) {
		t.Helper()
		if err := b.inject(ctx, tenant, session, run, events.RunState{State: events.RunCancelled}, id); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("gave up waiting until %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	a, bs := session(), session()
	runA := start(a, "hello")
	runB1 := start(bs, "hi")
	cancelRun(bs, runB1, "test:b1:cancel")
	waitFor("the first run of B ended", func() bool {
		s, err := store.GetSession(ctx, db, tenant, bs)
		return err == nil && s.ActiveRunID == ""
	})

	// B's next turn invokes a skill; artifacts sits on the expansion.
	runB2 := make(chan string, 1)
	go func() { runB2 <- start(bs, "/review-pr 12") }()
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("artifacts was never asked to expand")
	}
	// One more event of B, and then A's run ends: the writer commits both.
	cancelRun(bs, runB1, "test:b1:again")
	cancelRun(a, runA, "test:a:cancel")
	waitFor("A's run ended", func() bool {
		r, err := store.LoadRun(ctx, db, runA)
		return err == nil && r.State.Terminal()
	})
	close(release) // only now: the expansion is still awaited, not given up on

	var id string
	select {
	case id = <-runB2:
	case <-ctx.Done():
		t.Fatal("the start of B's second turn never returned")
	}
	r, err := store.LoadRun(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(r.Job.Prompt); got != "expanded" {
		t.Errorf("engine prompt = %q, want the expansion: A's events waited for the lock B's start held while expanding", got)
	}
}
