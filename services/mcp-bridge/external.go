package bridge

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/mcp-bridge/internal/binding"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// withDispatch admits a request for the run's external servers only when
// it also carries the run's dispatch token (bustoken.DispatchHeader, which
// the worker's MCP proxy sets) and that token names the tenant, project and
// run of the mcp token the request was admitted with (binding.From). The
// artifacts service resolves a run's servers only for a dispatch token of
// the run's project, so next's calls carry it (svc.WithToken). A request
// without it, or with another run's, is refused 401.
func withDispatch(verifier *bustoken.Verifier, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run, ok := binding.From(r.Context())
		if !ok {
			refuse(w, r, http.StatusUnauthorized, "no run: this request carries no verified run token")
			return
		}
		tok := strings.TrimSpace(r.Header.Get(bustoken.DispatchHeader))
		if err := sameRun(verifier, tok, run); err != nil {
			refuse(w, r, http.StatusUnauthorized, err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(svc.WithToken(r.Context(), tok)))
	})
}

// sameRun checks tok is a dispatch token of run's tenant, project and run.
func sameRun(verifier *bustoken.Verifier, tok string, run binding.Run) error {
	if tok == "" {
		return fmt.Errorf("%w: an external server needs the run's dispatch token (%s)", bustoken.ErrInvalid, bustoken.DispatchHeader)
	}
	c, err := verifier.Verify(tok, bustoken.Dispatch)
	if err != nil {
		return fmt.Errorf("%s: %w", bustoken.DispatchHeader, err)
	}
	if c.TenantID != run.TenantID || c.ProjectID != run.ProjectID || c.RunID != run.RunID {
		return fmt.Errorf("%w: the dispatch token is of another run than the mcp token", bustoken.ErrInvalid)
	}
	return nil
}

// serveProbe registers svc.mcpbridge.mcp.servers.probe on ms: the
// gateway's status check of a server, for caller tokens only (the probe
// resolves the server with the caller's token it forwards).
func serveProbe(ctx context.Context, nc *nats.Conn, ms micro.Service, verifier *bustoken.Verifier, opts ext.Options, onInternal func(error)) (stop func(), err error) {
	subject, err := events.ServiceSubject(events.MCPBridgeService, events.OpMCPServersProbe)
	if err != nil {
		return nil, err
	}
	srv := svc.NewServer(ctx, nc, ms, verifier)
	h := svc.Handler(onInternal, ext.ProbeHandler(ext.Bus{NC: nc}, opts))
	if err := ms.AddEndpoint("mcp_servers_probe", srv.Bind(h, bustoken.Caller), micro.WithEndpointSubject(subject)); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("endpoint %s: %w", events.OpMCPServersProbe, err)
	}
	return srv.Stop, nil
}
