package streammgr

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
)

// testKeys stand for the gateway's and streammgr's keys.
var testKeys = bustoken.Generate()

// testConfig is DefaultConfig with streammgr's keys.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Tokens = testKeys.Only(TokenKeys)
	return cfg
}

// asCaller returns ctx whose calls carry the gateway's caller token for
// the caller req embeds, as the gateway sends it.
func asCaller(t testing.TB, ctx context.Context, req any) context.Context {
	t.Helper()
	return bustokentest.AsCaller(t, ctx, testKeys, req)
}

// streammgr acts for the tenant of the caller token, whatever the body
// says: another tenant's session cannot be read by naming that tenant, a
// request without a token or with a dispatch token is refused, and a job
// carries a dispatch token bound to its run.
func TestStreammgrActsAsTheToken(t *testing.T) {
	ns := natstest.Start(t)
	nc, _ := natstest.Connect(t, ns)
	smc, _ := natstest.Connect(t, ns)
	db := pgtest.New(t, Schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, testConfig(), Deps{NATS: smc, DB: db, Logger: logging.Discard(), Health: health.New()})
	}()
	defer func() { cancel(); <-done }()

	a := events.Caller{TenantID: uuid.NewString(), UserID: uuid.NewString()}
	b := events.Caller{TenantID: uuid.NewString(), UserID: uuid.NewString()}
	subject := func(op string) string { s, _ := events.ServiceSubject(Name, op); return s }
	var sess events.Session
	for {
		err := svc.Call(asCaller(t, ctx, a), nc, subject(events.OpSessionCreate), events.SessionCreate{Caller: a, ProjectID: uuid.NewString()}, &sess)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	status := func(err error) int {
		var ae *events.APIError
		if errors.As(err, &ae) {
			return ae.Status
		}
		return 0
	}
	get := events.SessionRef{Caller: events.Caller{TenantID: a.TenantID}, SessionID: sess.ID}
	if err := svc.Call(ctx, nc, subject(events.OpSessionGet), get, nil); status(err) != http.StatusUnauthorized {
		t.Errorf("sessions.get naming A without a token = %v, want 401", err)
	}
	if err := svc.Call(asCaller(t, ctx, b), nc, subject(events.OpSessionGet), get, nil); status(err) != http.StatusUnauthorized {
		t.Errorf("B's token naming A = %v, want 401", err)
	}
	if err := svc.Call(asCaller(t, ctx, b), nc, subject(events.OpSessionGet), events.SessionRef{SessionID: sess.ID}, nil); status(err) != http.StatusNotFound {
		t.Errorf("B's token, no tenant in the body = %v, want 404 (acts as B)", err)
	}
	ds, _ := testKeys.DispatchSigner()
	run, _ := ds.Sign(bustoken.Claims{TenantID: a.TenantID, RunID: "r"})
	if err := svc.Call(svc.WithToken(ctx, run), nc, subject(events.OpSessionGet), get, nil); status(err) != http.StatusUnauthorized {
		t.Errorf("a dispatch token on sessions.get = %v, want 401", err)
	}
	var got events.Session
	if err := svc.Call(asCaller(t, ctx, a), nc, subject(events.OpSessionGet), get, &got); err != nil || got.ID != sess.ID {
		t.Errorf("A's own session = %+v, %v", got, err)
	}
}

// The job a run is published with carries a dispatch token of that run.
func TestJobsCarryTheirRunsToken(t *testing.T) {
	nc, js := natstest.Connect(t, natstest.Start(t))
	if err := DeclareStreams(t.Context(), js, DefaultStreamSettings()); err != nil {
		t.Fatal(err)
	}
	signer, _ := testKeys.DispatchSigner()
	b := bus{js: js, log: logging.Discard(), runs: signer}
	job := events.Job{Tenant: "t1", RunID: "r1", SessionID: "s1", ProjectID: "p1", Engine: events.EngineCodex, AccountID: "a1", RequestedBy: "u1"}
	sub, err := nc.SubscribeSync("job.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.publishJob(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var sent events.Job
	if err := json.Unmarshal(msg.Data, &sent); err != nil {
		t.Fatal(err)
	}
	c, err := testKeys.Verifier().Verify(sent.DispatchToken, bustoken.Dispatch)
	if err != nil {
		t.Fatalf("the job's token: %v", err)
	}
	want := bustoken.Claims{Kind: bustoken.Dispatch, TenantID: "t1", UserID: "u1", RunID: "r1", SessionID: "s1", ProjectID: "p1",
		Engine: "codex", AccountID: "a1", IssuedAt: c.IssuedAt, ExpiresAt: c.IssuedAt + int64(bustoken.DispatchTTL/time.Second)}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("claims = %+v, want %+v", c, want)
	}
}

// streammgr does not start without its keys.
func TestRunNeedsTheTokenKeys(t *testing.T) {
	err := Run(context.Background(), DefaultConfig(), Deps{})
	if err == nil || !strings.Contains(err.Error(), bustoken.EnvDispatchKey) || !strings.Contains(err.Error(), bustoken.EnvCallerPubKey) {
		t.Errorf("Run without keys = %v", err)
	}
}
