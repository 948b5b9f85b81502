// Package servepg wires a service that owns a Postgres schema as its own
// process: servekit's process (NATS, telemetry, the admin listener) plus the
// pool, its schema checked (never migrated here) and its health reported.
// It is apart from servekit so that a service without a database (the
// engine worker) links no Postgres driver.
package servepg

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/servekit"
)

// EnvDatabase is the environment variable with the database's URL.
const EnvDatabase = "DATABASE_URL"

// Process is what a standalone service with a schema gets from Start.
type Process struct {
	*servekit.Process
	DB *pgxpool.Pool
}

// Options says what the service needs.
type Options struct {
	Name   string
	Schema pgdb.Schema // the schema the service owns
}

// Start connects everything the service needs. The returned function closes
// it all and must be called when the service has stopped.
func Start(ctx context.Context, getenv func(string) string, stderr io.Writer, opts Options) (*Process, func(), error) {
	p, closeAll, err := servekit.Start(ctx, getenv, stderr, servekit.Options{Name: opts.Name})
	if err != nil {
		return nil, nil, err
	}
	url := getenv(EnvDatabase)
	if url == "" {
		closeAll()
		return nil, nil, fmt.Errorf("%s needs %s", opts.Name, EnvDatabase)
	}
	pool, err := pgdb.Open(ctx, url)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	if err := pgdb.Check(ctx, pool, opts.Schema); err != nil {
		pool.Close()
		closeAll()
		return nil, nil, err
	}
	stats, err := pgdb.ObservePool(pool, opts.Name)
	if err != nil {
		pool.Close()
		closeAll()
		return nil, nil, err
	}
	p.Health.Add("postgres", pool.Ping)
	return &Process{Process: p, DB: pool}, func() { _ = stats.Unregister(); pool.Close(); closeAll() }, nil
}
