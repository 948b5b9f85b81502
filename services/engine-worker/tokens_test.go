package worker

import (
	"context"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
)

// testKeys stand for the gateway's and streammgr's keys.
var testKeys = bustoken.Generate()

// asCaller returns ctx whose calls carry the gateway's caller token for
// the caller req embeds; a request naming no tenant goes without one (and
// is refused 401).
func asCaller(t testing.TB, ctx context.Context, req any) context.Context {
	t.Helper()
	return bustokentest.AsCaller(t, ctx, testKeys, req)
}

// dispatchToken is streammgr's token of job.
func dispatchToken(t testing.TB, job events.Job) string {
	t.Helper()
	return bustokentest.Sign(t, testKeys, bustoken.Dispatch, bustoken.Claims{TenantID: job.Tenant, UserID: job.RequestedBy,
		RunID: job.RunID, SessionID: job.SessionID, ProjectID: job.ProjectID, Engine: string(job.Engine), AccountID: job.AccountID})
}
