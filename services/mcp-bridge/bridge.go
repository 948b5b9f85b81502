// Package bridge is the mcp-bridge service: MCP Streamable HTTP bridge for agents.
// This is its skeleton: it starts, reports health and stops cleanly.
package bridge

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/servepg"
)

// Name is the service name on the bus and in logs.
const Name = "mcp-bridge"

// Config tunes the service.
type Config struct{}

// DefaultConfig returns the configuration `clopen dev` uses.
func DefaultConfig() Config { return Config{} }

// Deps are the connections the service runs on; the caller owns them.
type Deps struct {
	NATS   *nats.Conn
	DB     *pgxpool.Pool
	Logger *slog.Logger
	Health *health.Registry
}

// Run serves until ctx ends.
func Run(ctx context.Context, cfg Config, d Deps) error {
	svc, err := micro.AddService(d.NATS, micro.Config{Name: "mcpbridge", Version: "0.1.0", Description: "MCP Streamable HTTP bridge for agents"})
	if err != nil {
		return fmt.Errorf("add micro service: %w", err)
	}
	defer func() { _ = svc.Stop() }()
	d.Health.Add(Name, func(ctx context.Context) error { return d.DB.Ping(ctx) })
	defer d.Health.Remove(Name)
	d.Logger.InfoContext(ctx, Name+" ready")
	<-ctx.Done()
	return nil
}

// Serve runs the service as its own process, configured from the environment.
func Serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	p, closeAll, err := servepg.Start(ctx, getenv, stderr, servepg.Options{Name: Name, Schema: Schema})
	if err != nil {
		return err
	}
	defer closeAll()
	return Run(ctx, DefaultConfig(), Deps{NATS: p.NATS, DB: p.DB, Logger: p.Logger, Health: p.Health})
}
