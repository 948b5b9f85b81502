package worker

import (
	"context"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/svc"
)

// testKeys stand for the gateway's and streammgr's keys.
var testKeys = bustoken.Generate()

// asCaller returns ctx whose calls carry the gateway's caller token for
// the caller req embeds; a request naming no tenant goes without one (and
// is refused 401).
func asCaller(t testing.TB, ctx context.Context, req any) context.Context {
	t.Helper()
	c := req.(interface{ Who() events.Caller }).Who()
	if c.TenantID == "" {
		return ctx
	}
	s, _ := testKeys.CallerSigner()
	tok, err := s.Sign(bustoken.Claims{TenantID: c.TenantID, UserID: c.UserID})
	if err != nil {
		t.Fatal(err)
	}
	return svc.WithToken(ctx, tok)
}

// dispatchToken is streammgr's token of job.
func dispatchToken(t testing.TB, job events.Job) string {
	t.Helper()
	s, _ := testKeys.DispatchSigner()
	tok, err := s.Sign(bustoken.Claims{TenantID: job.Tenant, UserID: job.RequestedBy, RunID: job.RunID, SessionID: job.SessionID,
		ProjectID: job.ProjectID, Engine: string(job.Engine), AccountID: job.AccountID})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
