// Package pgdb connects to Postgres and applies a service's embedded
// migrations into the schema that service owns.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// ErrSchemaTooNew is returned by Migrate when the database holds migrations
// that this binary does not know: a newer release has run against it.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// Schema is one service's slice of the database: a Postgres schema name and
// the SQL migrations (goose format, files NNN_name.sql at the root of FS)
// that build it. Migrations qualify every object with the schema name.
type Schema struct {
	Name       string
	Migrations fs.FS
}

var schemaName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Open connects a pool to url, retrying with backoff until the server
// answers or ctx ends, so a service can start before its database.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	// Queries are spans under the request that makes them (none without
	// one), named for their operation and table.
	cfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithDisableAcquireTracer())
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMaxInterval(2*time.Second),
		backoff.WithMaxElapsedTime(30*time.Second),
	), ctx)
	if err := backoff.Retry(func() error { return pool.Ping(ctx) }, b); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping %s: %w", cfg.ConnConfig.Host, err)
	}
	return pool, nil
}

// Migrate applies every pending migration of s and returns how many ran.
// Concurrent callers (several replicas starting at once) serialise on a
// Postgres advisory lock. A database that is ahead of the binary is refused
// with ErrSchemaTooNew and left untouched.
func Migrate(ctx context.Context, pool *pgxpool.Pool, s Schema, logger *slog.Logger) (int, error) {
	p, closeDB, err := provider(ctx, pool, s, logger)
	if err != nil {
		return 0, err
	}
	defer closeDB()
	if err := checkNotAhead(ctx, p, s); err != nil {
		return 0, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate %s: %w", s.Name, err)
	}
	return len(results), nil
}

// Check verifies, without changing anything, that the database holds exactly
// the migrations this binary knows for s: not behind (run `clopen migrate`)
// and not ahead (upgrade the binary).
func Check(ctx context.Context, pool *pgxpool.Pool, s Schema) error {
	p, closeDB, err := provider(ctx, pool, s, nil)
	if err != nil {
		return err
	}
	defer closeDB()
	if err := checkNotAhead(ctx, p, s); err != nil {
		return err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("check %s: %w", s.Name, err)
	}
	if pending {
		return fmt.Errorf("schema %s has pending migrations: run `clopen migrate`", s.Name)
	}
	return nil
}

func provider(ctx context.Context, pool *pgxpool.Pool, s Schema, logger *slog.Logger) (*goose.Provider, func(), error) {
	if !schemaName.MatchString(s.Name) {
		return nil, nil, fmt.Errorf("schema name %q: want lower-case letters, digits and _", s.Name)
	}
	// The version table lives inside the schema, so the schema must exist first.
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{s.Name}.Sanitize()); err != nil {
		return nil, nil, fmt.Errorf("create schema %s: %w", s.Name, err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID(s.Name)))
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	opts := []goose.ProviderOption{
		goose.WithTableName(s.Name + ".schema_migrations"),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, s.Migrations, opts...)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("load migrations of %s: %w", s.Name, err)
	}
	return p, func() { _ = p.Close() }, nil
}

func checkNotAhead(ctx context.Context, p *goose.Provider, s Schema) error {
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("read version of %s: %w", s.Name, err)
	}
	var known int64
	for _, src := range p.ListSources() {
		known = max(known, src.Version)
	}
	if current > known {
		return fmt.Errorf("%w: schema %s is at migration %d, this binary knows up to %d; upgrade Clopen before running it against this database",
			ErrSchemaTooNew, s.Name, current, known)
	}
	return nil
}

// lockID derives a per-schema advisory lock id so services migrate in parallel
// while replicas of one service wait for each other.
func lockID(name string) int64 {
	var h int64 = 1469598103
	for _, c := range []byte(name) {
		h = h*1099511 + int64(c)
	}
	return h & 0x7fffffffffff
}
