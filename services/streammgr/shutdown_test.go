package streammgr

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
)

// Run must not return while an EVENTS delivery is still being routed:
// stopping a Consume does not wait for the callback in flight, which then
// queued a chat publication after Run had waited for the last one (the
// race detector saw the publisher's WaitGroup grow during its Wait). Each
// round stops streammgr in the middle of a flood of deltas and checks that
// it sends nothing to CHAT once Run has returned, and that the next
// instance routes at once: what the stopped one received but did not
// commit is handed back, not left to its ack wait (which held routing up
// for 10 to 70 s after a restart).
func TestRunReturnsOnlyWhenRoutingHasStopped(t *testing.T) {
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	db := pgtest.New(t, Schema)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	tenant, project := uuid.NewString(), uuid.NewString()
	caller := events.Caller{TenantID: tenant, UserID: uuid.NewString()}
	var session, run string
	seq := uint64(0)
	for round := range 4 {
		smc, _ := natstest.Connect(t, ns)
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		cfg := testConfig()
		cfg.AckWait = 30 * time.Second
		go func() {
			done <- Run(rctx, cfg, Deps{NATS: smc, DB: db, Logger: logging.Discard(), Health: health.New()})
		}()
		if round == 0 {
			session, run = startOneRun(t, ctx, nc, caller, project)
		}
		chatSubject, _ := events.ChatSubject(tenant, session)
		before := chatCount(t, ctx, js, chatSubject)

		// Publish deltas until streammgr has routed some of them, then stop
		// it while the rest keep arriving.
		flood, floodDone := context.WithCancel(ctx)
		published := make(chan struct{})
		go func() {
			defer close(published)
			for flood.Err() == nil {
				seq++
				var o events.Output = events.StreamEvent{Event: events.StreamDelta, SessionID: "eng-1", Text: "x"}
				if seq == 1 {
					o = events.StreamEvent{Event: events.StreamStart, SessionID: "eng-1"}
				}
				// Not under flood: a publication cut short could leave a gap.
				if err := publishEnvelope(ctx, js, events.Envelope{Tenant: tenant, Run: run, Session: session,
					Epoch: 1, Seq: seq, EmittedAt: time.Now().UTC(), Output: o}); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
			}
		}()
		began := time.Now()
		for chatCount(t, ctx, js, chatSubject) < before+20 {
			if ctx.Err() != nil {
				t.Fatalf("round %d: streammgr routed nothing", round)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if took := time.Since(began); took > cfg.AckWait/2 {
			t.Errorf("round %d: routing began %v after streammgr started, want well within the ack wait (%v)", round, took, cfg.AckWait)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("round %d: Run = %v", round, err)
		}
		// CHAT stores what its connection sent in order: once a message
		// sent on it after Run returned is stored, what streammgr sent
		// before is too, and anything counted later was sent after.
		marker, _ := events.ChatSubject(tenant, uuid.NewString())
		sjs, err := jetstream.New(smc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sjs.Publish(ctx, marker, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		after := chatCount(t, ctx, js, chatSubject)
		time.Sleep(300 * time.Millisecond)
		if late := chatCount(t, ctx, js, chatSubject); late != after {
			t.Fatalf("round %d: %d chat events were published after Run returned", round, late-after)
		}
		floodDone()
		<-published
		smc.Close()
	}
}

// startOneRun creates a session of project and starts a turn in it,
// returning both ids; streammgr may still be starting.
func startOneRun(t *testing.T, ctx context.Context, nc *nats.Conn, caller events.Caller, project string) (session, run string) {
	t.Helper()
	var s events.Session
	callStreammgr(t, ctx, nc, events.OpSessionCreate, events.SessionCreate{Caller: caller, ProjectID: project, Engine: events.EngineCodex}, &s)
	var r events.StartTurnReply
	callStreammgr(t, ctx, nc, events.OpStart, events.StartTurnRequest{Caller: caller, SessionID: s.ID,
		Prompt: []events.Block{events.TextBlock{Text: "hello"}}}, &r)
	return s.ID, r.RunID
}

// callStreammgr calls streammgr's op as req's caller, again until it
// answers (it may still be starting) or ctx ends.
func callStreammgr(t *testing.T, ctx context.Context, nc *nats.Conn, op string, req, resp any) {
	t.Helper()
	subject, _ := events.ServiceSubject(Name, op)
	for {
		err := svc.Call(asCaller(t, ctx, req), nc, subject, req, resp)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: %v", op, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// publishEnvelope publishes env to EVENTS as a worker does.
func publishEnvelope(ctx context.Context, js jetstream.JetStream, env events.Envelope) error {
	subject, err := events.EventsSubject(env.Tenant, env.Run)
	if err != nil {
		return err
	}
	data, err := json.Marshal(env)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(events.HeaderRun, env.Run)
	msg.Header.Set(events.HeaderType, env.Output.OutputType())
	_, err = js.PublishMsg(ctx, msg, jetstream.WithMsgID(env.MsgID()))
	return err
}

// chatCount returns how many messages CHAT holds on subject.
func chatCount(t *testing.T, ctx context.Context, js jetstream.JetStream, subject string) uint64 {
	t.Helper()
	s, err := js.Stream(ctx, events.StreamChat)
	if err != nil {
		return 0 // not declared yet
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}
