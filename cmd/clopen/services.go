package main

import (
	"clopen.dev/cmd/clopen/internal/stack"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/services/artifacts"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway"
	bridge "clopen.dev/services/mcp-bridge"
	"clopen.dev/services/streammgr"
)

// servers maps `clopen serve <name>` to each service's standalone entry point.
var servers = map[string]func(context.Context, func(string) string, io.Writer) error{
	gateway.Name:   gateway.Serve,
	streammgr.Name: streammgr.Serve,
	worker.Name:    worker.Serve,
	artifacts.Name: artifacts.Serve,
	bridge.Name:    bridge.Serve,
}

func serviceNames() string {
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if wantsHelp(args) {
		fmt.Fprintf(stdout, "usage: clopen serve <service>\n\nruns one service as its own process; services: %s\n"+
			"configured by CLOPEN_NATS_URL (default nats://127.0.0.1:4222), DATABASE_URL, CLOPEN_ADMIN_ADDR\n"+
			"(health and metrics) and the service's own variables (docs/CONFIGURATION.md)\n", serviceNames())
		return nil
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: clopen serve <service>; services: %s", serviceNames())
	}
	serve, ok := servers[args[0]]
	if !ok {
		return fmt.Errorf("unknown service %q; services: %s", args[0], serviceNames())
	}
	return serve(ctx, getenv, stderr)
}

// migrateAll applies every schema's pending migrations and reports each.
func migrateAll(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, out io.Writer) error {
	for _, s := range stack.Schemas {
		n, err := pgdb.Migrate(ctx, pool, s, logger)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "schema %-10s %d migration(s) applied\n", s.Name, n)
	}
	return nil
}

func runMigrate(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	url := getenv("DATABASE_URL")
	if url == "" {
		return fmt.Errorf("clopen migrate needs DATABASE_URL (clopen dev migrates its own database at start)")
	}
	pool, err := pgdb.Open(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	return migrateAll(ctx, pool, nil, stdout)
}
