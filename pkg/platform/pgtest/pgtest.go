// Package pgtest gives a test its own fresh Postgres database on the server
// named by DATABASE_URL, migrated with the schemas it asks for and dropped
// when the test ends.
//
// Without DATABASE_URL it tries the local server at 127.0.0.1:5432; when no
// server answers, the test is skipped, saying so, except under CI=true, where
// it fails: integration tests never skip in CI.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/pgdb"
)

const localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL of the server tests may create databases on, or
// skips (fails under CI) the test when there is none.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		u = localURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("postgres at %s unreachable under CI=true: %v", redact(u), err)
		}
		t.Skipf("no postgres reachable (%v); set DATABASE_URL to run this test", err)
	}
	_ = conn.Close(ctx)
	return u
}

// NewURL creates a fresh, empty database and returns its URL. The database is
// dropped when the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "clopen_test_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect admin: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse DATABASE_URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// New returns a pool on a fresh database with schemas migrated, closed and
// dropped when the test ends.
func New(t testing.TB, schemas ...pgdb.Schema) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, NewURL(t))
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(pool.Close)
	for _, s := range schemas {
		if _, err := pgdb.Migrate(ctx, pool, s, logging.Discard()); err != nil {
			t.Fatalf("migrate %s: %v", s.Name, err)
		}
	}
	return pool
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparseable url)"
	}
	return fmt.Sprint(p.Redacted())
}
