package ext

import (
	"context"
	"errors"
	"net/http"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
)

// Bus resolves servers from the artifacts service
// (svc.artifacts.mcp.servers.resolve). The artifacts service answers only a
// dispatch token of the run's project: ctx must carry the run's token
// (svc.WithToken), which the bridge holds for the run it serves.
type Bus struct {
	NC *nats.Conn
}

// Server implements Resolver.
func (b Bus) Server(ctx context.Context, tenant, project, slug string) (events.ResolvedMCPServer, error) {
	var out events.ResolvedMCPServer
	subject, err := events.ServiceSubject(events.ArtifactsService, events.OpMCPServersResolve)
	if err != nil {
		return out, err
	}
	err = svc.Call(ctx, b.NC, subject, events.MCPServerRef{Caller: events.Caller{TenantID: tenant}, ProjectID: project, Slug: slug}, &out)
	var ae *events.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return out, ErrNotFound
	}
	return out, err
}
