package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// sourceAD binds a project's sealed source credential to its tenant and
// project: an envelope copied to another row does not open.
func sourceAD(tenant, project string) string { return "source_credential:" + tenant + ":" + project }

func validProject(project string) error {
	if strings.TrimSpace(project) == "" || len(project) > 128 {
		return fmt.Errorf("%w: projectId", ErrInvalid)
	}
	return nil
}

// PutSourceCredential seals credential as the one project's repository is
// reached with, replacing any earlier one.
func (s *Store) PutSourceCredential(ctx context.Context, tenant, project, credential string) error {
	if err := validProject(project); err != nil {
		return err
	}
	if credential == "" {
		return fmt.Errorf("%w: an empty credential (delete it instead)", ErrInvalid)
	}
	return pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		return audited(ctx, tx, tenant, sourceCredentialTarget("source_credential.set", tenant, project), func(tx pgx.Tx) error {
			return s.sealSource(ctx, tx, tenant, project, credential)
		})
	})
}

// sealSource seals credential as project's, in tx.
func (s *Store) sealSource(ctx context.Context, tx pgx.Tx, tenant, project, credential string) error {
	key, err := s.SealingKey(ctx, tx)
	if err != nil {
		return err
	}
	env, err := key.Seal(credential, sourceAD(tenant, project))
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO artifacts.source_credentials (tenant_id, project_id, credential, key_fingerprint)
		VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, project_id) DO UPDATE
		SET credential = excluded.credential, key_fingerprint = excluded.key_fingerprint, updated_at = now()`,
		tenant, project, env, key.Fingerprint())
	return mapErr(err)
}

// DeleteSourceCredential forgets project's credential; none is no error.
func (s *Store) DeleteSourceCredential(ctx context.Context, tenant, project string) error {
	if err := validProject(project); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		var had bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM artifacts.source_credentials WHERE tenant_id = $1 AND project_id = $2)`,
			tenant, project).Scan(&had); err != nil || !had {
			return err // none: nothing changes, nothing to record
		}
		return audited(ctx, tx, tenant, sourceCredentialTarget("source_credential.delete", tenant, project), func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `DELETE FROM artifacts.source_credentials WHERE tenant_id = $1 AND project_id = $2`, tenant, project)
			return mapErr(err)
		})
	})
}

// ResolveSourceCredential returns project's unsealed credential, "" when
// it has none (a public repository).
func (s *Store) ResolveSourceCredential(ctx context.Context, tenant, project string) (string, error) {
	if err := validProject(project); err != nil {
		return "", err
	}
	var env string
	err := s.DB.QueryRow(ctx, `SELECT credential FROM artifacts.source_credentials WHERE tenant_id = $1 AND project_id = $2`,
		tenant, project).Scan(&env)
	if err == pgx.ErrNoRows {
		return "", nil
	}
	if err != nil {
		return "", mapErr(err)
	}
	plain, err := s.Keys.Open(env, sourceAD(tenant, project))
	if err != nil {
		return "", fmt.Errorf("open the source credential of project %s: %w", project, err)
	}
	return plain, nil
}
