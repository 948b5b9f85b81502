// Package store keeps the artifacts: rows in the artifacts schema, skill and
// subagent documents on disk, sealed account credentials. Every method
// takes the tenant and every query filters by it; a row of another tenant
// is ErrNotFound, never forbidden. Every change bumps the tenant's revision
// in the same transaction and reports it through OnChange after commit.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/services/artifacts/internal/seal"
)

// Errors callers map to API errors.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
)

// Store is the artifacts' state. OnChange, when set, is called after every
// committed change with the tenant's new revision.
type Store struct {
	DB       *pgxpool.Pool
	Docs     *Docs
	Keys     *seal.Keyring
	OnChange func(ctx context.Context, tenant string, revision int64)
}

// change runs fn in a transaction that records it in the audit log as a
// change of t and bumps the tenant's revision, then reports the revision.
// after runs once the transaction committed.
func (s *Store) change(ctx context.Context, tenant string, t target, fn func(tx pgx.Tx) error, after ...func()) (int64, error) {
	var rev int64
	err := pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		if err := audited(ctx, tx, tenant, t, fn); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO artifacts.revisions (tenant_id, revision) VALUES ($1, 1)
			ON CONFLICT (tenant_id) DO UPDATE SET revision = artifacts.revisions.revision + 1, updated_at = now()
			RETURNING revision`, tenant).Scan(&rev)
	})
	if err != nil {
		return 0, mapErr(err)
	}
	for _, f := range after {
		f()
	}
	if s.OnChange != nil {
		s.OnChange(ctx, tenant, rev)
	}
	return rev, nil
}

// Revision returns the tenant's current revision (0 before any change).
func (s *Store) Revision(ctx context.Context, tenant string) (int64, error) {
	var rev int64
	err := s.DB.QueryRow(ctx, `SELECT revision FROM artifacts.revisions WHERE tenant_id = $1`, tenant).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return rev, err
}

// Revisions returns every tenant's revision, for republishing the bucket.
func (s *Store) Revisions(ctx context.Context) (map[string]int64, error) {
	rows, err := s.DB.Query(ctx, `SELECT tenant_id::text, revision FROM artifacts.revisions`)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for rows.Next() {
		var t string
		var r int64
		if err := rows.Scan(&t, &r); err != nil {
			return nil, err
		}
		out[t] = r
	}
	return out, rows.Err()
}

// mapErr turns constraint violations into ErrConflict and a missing row
// into ErrNotFound.
func mapErr(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
	case errors.As(err, &pgErr) && (pgErr.Code == "23503" || pgErr.Code == "23514" || pgErr.Code == "22P02"):
		return fmt.Errorf("%w: %s", ErrInvalid, pgErr.Message)
	}
	return err
}

// affected turns "no row changed" into ErrNotFound.
func affected(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
