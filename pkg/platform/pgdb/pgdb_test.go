package pgdb_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"

	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/pgtest"
)

func schema(files ...string) pgdb.Schema {
	fs := fstest.MapFS{}
	bodies := map[string]string{
		"001_items.sql": "-- +goose Up\nCREATE TABLE demo.items (id int PRIMARY KEY);\n-- +goose Down\nDROP TABLE demo.items;\n",
		"002_names.sql": "-- +goose Up\nALTER TABLE demo.items ADD COLUMN name text;\n-- +goose Down\nALTER TABLE demo.items DROP COLUMN name;\n",
	}
	for _, f := range files {
		fs[f] = &fstest.MapFile{Data: []byte(bodies[f])}
	}
	return pgdb.Schema{Name: "demo", Migrations: fs}
}

func TestMigrateAppliesOnceAndRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	full := schema("001_items.sql", "002_names.sql")

	n, err := pgdb.Migrate(ctx, pool, full, logging.Discard())
	if err != nil || n != 2 {
		t.Fatalf("first Migrate = %d, %v; want 2, nil", n, err)
	}
	if n, err := pgdb.Migrate(ctx, pool, full, logging.Discard()); err != nil || n != 0 {
		t.Fatalf("second Migrate = %d, %v; want 0, nil", n, err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO demo.items (id, name) VALUES (1, 'x')"); err != nil {
		t.Fatalf("migrated table unusable: %v", err)
	}
	if err := pgdb.Check(ctx, pool, full); err != nil {
		t.Errorf("Check on an up-to-date schema: %v", err)
	}

	older := schema("001_items.sql") // a binary that predates 002
	if _, err := pgdb.Migrate(ctx, pool, older, logging.Discard()); !errors.Is(err, pgdb.ErrSchemaTooNew) {
		t.Fatalf("Migrate with an older binary err = %v, want ErrSchemaTooNew", err)
	}
	if err := pgdb.Check(ctx, pool, older); !errors.Is(err, pgdb.ErrSchemaTooNew) {
		t.Errorf("Check with an older binary err = %v, want ErrSchemaTooNew", err)
	}
}

func TestCheckReportsPendingMigrations(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.New(t)
	if _, err := pgdb.Migrate(ctx, pool, schema("001_items.sql"), logging.Discard()); err != nil {
		t.Fatal(err)
	}
	if err := pgdb.Check(ctx, pool, schema("001_items.sql", "002_names.sql")); err == nil {
		t.Error("Check passed with a pending migration")
	}
}

func TestMigrateRejectsBadSchemaName(t *testing.T) {
	pool := pgtest.New(t)
	s := schema("001_items.sql")
	s.Name = "Demo; DROP"
	if _, err := pgdb.Migrate(context.Background(), pool, s, nil); err == nil {
		t.Error("bad schema name accepted")
	}
}
