package svc

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// NewServerWithGrace is NewServer with another grace than StopGrace.
func NewServerWithGrace(ctx context.Context, nc *nats.Conn, service micro.Service, grace time.Duration) *Server {
	return newServer(ctx, nc, service, grace)
}
