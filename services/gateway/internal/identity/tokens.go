package identity

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/svc"
)

// Bus calls the services for principals, signing the caller token of each
// call: the services take whom a request acts for from that token only. It
// is safe for concurrent use.
type Bus struct {
	nc     *nats.Conn
	signer *bustoken.Signer
}

// NewBus returns a Bus calling over nc and signing with s
// (bustoken.Keys.CallerSigner).
func NewBus(nc *nats.Conn, s *bustoken.Signer) *Bus { return &Bus{nc: nc, signer: s} }

// Call is svc.Call with a fresh caller token (bustoken.CallerTTL) for the
// events.Caller req embeds, which the gateway builds from the principal
// (Principal.Caller) and nothing else. A request without one is refused:
// the gateway never calls a service for nobody.
func (b *Bus) Call(ctx context.Context, subject string, req, resp any) error {
	r, ok := req.(interface{ Who() events.Caller })
	if !ok {
		return fmt.Errorf("call %s: the request names no caller", subject)
	}
	w := r.Who()
	tok, err := b.signer.Sign(bustoken.Claims{TenantID: w.TenantID, UserID: w.UserID, UserName: w.UserName, Role: w.Role})
	if err != nil {
		return fmt.Errorf("call %s: %w", subject, err)
	}
	return svc.Call(svc.WithToken(ctx, tok), b.nc, subject, req, resp)
}
