package worker

import (
	"context"
	"errors"
	"net/http"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/engine-worker/engines"
)

// ArtifactAccounts resolves tenants' engine accounts through the artifacts
// service, for engines.Setup.Accounts.
func ArtifactAccounts(nc *nats.Conn) engines.Accounts { return artifactAccounts{nc} }

type artifactAccounts struct{ nc *nats.Conn }

func (a artifactAccounts) Resolve(ctx context.Context, tenant string, typ events.EngineType, id string) (events.ResolvedAccount, error) {
	subject, err := events.ServiceSubject(events.ArtifactsService, events.OpAccountsResolve)
	if err != nil {
		return events.ResolvedAccount{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, planTimeout)
	defer cancel()
	var acc events.ResolvedAccount
	err = svc.Call(cctx, a.nc, subject, events.AccountResolve{Caller: events.Caller{TenantID: tenant}, Engine: typ, AccountID: id}, &acc)
	var apiErr *events.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return acc, engines.ErrNoAccount
	}
	return acc, err
}
