package worker

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/svc"
)

// fakeAccounts stands in for the artifacts service's engine accounts on the
// bus, so the worker's tests need no database: svc.artifacts.accounts.resolve
// answers within a tenant and an engine (404 otherwise, as artifacts does),
// and every account added bumps the tenant's revision in artifact_rev.
// Artifacts' own tests and the stack tests (cmd/clopen/internal/stack) hold
// the real service to those answers.
type fakeAccounts struct {
	kv jetstream.KeyValue

	mu   sync.Mutex
	list []fakeAccount // in the order added
	rev  int64
}

type fakeAccount struct {
	tenant string
	engine events.EngineType
	id     string
}

// serveFakeAccounts serves the double on nc until the test ends.
func serveFakeAccounts(t *testing.T, nc *nats.Conn, js jetstream.JetStream) *fakeAccounts {
	t.Helper()
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: events.BucketArtifactRev})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAccounts{kv: kv}
	s, err := micro.AddService(nc, micro.Config{Name: events.ArtifactsService, Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServer(context.Background(), nc, s, testKeys.Verifier())
	t.Cleanup(srv.Stop)
	subject, _ := events.ServiceSubject(events.ArtifactsService, events.OpAccountsResolve)
	if err := s.AddEndpoint("accounts-resolve", srv.Bind(svc.Handler(nil, f.resolve), bustoken.Dispatch, bustoken.Caller), micro.WithEndpointSubject(subject)); err != nil {
		t.Fatal(err)
	}
	return f
}

// add creates an account of engine for tenant and returns its id.
func (f *fakeAccounts) add(t *testing.T, tenant string, engine events.EngineType) string {
	t.Helper()
	f.mu.Lock()
	id := uuid.NewString()
	f.list = append(f.list, fakeAccount{tenant: tenant, engine: engine, id: id})
	f.rev++
	rev := f.rev
	f.mu.Unlock()
	if _, err := f.kv.Put(context.Background(), tenant, []byte(strconv.FormatInt(rev, 10))); err != nil {
		t.Fatal(err)
	}
	return id
}

// resolve is the tenant's account of the engine named by id, or its first
// one when id is empty.
func (f *fakeAccounts) resolve(_ context.Context, req events.AccountResolve) (events.ResolvedAccount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.list {
		if a.tenant == req.TenantID && a.engine == req.Engine && (req.AccountID == "" || req.AccountID == a.id) {
			return events.ResolvedAccount{AccountID: a.id, Provider: "p", Name: "work", Credential: "sk-test"}, nil
		}
	}
	return events.ResolvedAccount{}, svc.NotFound("account %q not found", req.AccountID)
}
