package svc

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/platform/bustoken"
)

// NewServerWithGrace is NewServer with another grace than StopGrace.
func NewServerWithGrace(ctx context.Context, nc *nats.Conn, service micro.Service, tokens *bustoken.Verifier, grace time.Duration) *Server {
	return newServer(ctx, nc, service, tokens, grace)
}
