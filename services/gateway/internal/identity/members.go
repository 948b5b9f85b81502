package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
)

// ListMembers returns the members of project (which p must be able to use),
// owners first.
func (s *Store) ListMembers(ctx context.Context, p Principal, project string) ([]api.Member, error) {
	if _, err := s.Project(ctx, p, project); err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT u.id, u.email, u.name, m.role, m.joined_at
		FROM gateway.memberships m JOIN gateway.users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
		WHERE m.tenant_id = $1 AND m.project_id = $2 ORDER BY m.role DESC, u.email`, p.TenantID, project)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (api.Member, error) {
		var m api.Member
		return m, r.Scan(&m.UserID, &m.Email, &m.Name, &m.Role, &m.JoinedAt)
	})
}

// AddMember makes a user of p's tenant a member of project, or changes its
// role. p must administer the tenant or own the project.
func (s *Store) AddMember(ctx context.Context, p Principal, project string, in api.AddMember) (api.Member, error) {
	if in.Role == "" {
		in.Role = api.ProjectMember
	}
	if in.Role != api.ProjectOwner && in.Role != api.ProjectMember {
		return api.Member{}, apierr.New(apierr.ErrInvalid, "role: want owner or member, not %q", in.Role)
	}
	if _, err := s.ManagedProject(ctx, p, project); err != nil {
		return api.Member{}, err
	}
	u, err := s.User(ctx, p.TenantID, in.UserID)
	if err != nil {
		return api.Member{}, err
	}
	m := api.Member{UserID: u.ID, Email: u.Email, Name: u.Name, Role: in.Role}
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := lockProject(ctx, tx, p.TenantID, project); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO gateway.memberships (project_id, user_id, tenant_id, role) VALUES ($1, $2, $3, $4)
			ON CONFLICT (project_id, user_id) DO UPDATE SET role = EXCLUDED.role RETURNING joined_at`,
			project, u.ID, p.TenantID, in.Role).Scan(&m.JoinedAt); err != nil {
			return err
		}
		return checkOwnerLeft(ctx, tx, p.TenantID, project)
	})
	if err != nil {
		return api.Member{}, wrapUnlessClassified("add member", err)
	}
	return m, nil
}

// RemoveMember removes user from project. p must administer the tenant or
// own the project; the last owner cannot be removed.
func (s *Store) RemoveMember(ctx context.Context, p Principal, project, user string) error {
	if _, err := s.ManagedProject(ctx, p, project); err != nil {
		return err
	}
	if !validID(user) {
		return notFound("member", user)
	}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := lockProject(ctx, tx, p.TenantID, project); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM gateway.memberships WHERE tenant_id = $1 AND project_id = $2 AND user_id = $3`,
			p.TenantID, project, user)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("member", user)
		}
		return checkOwnerLeft(ctx, tx, p.TenantID, project)
	})
	return wrapUnlessClassified("remove member", err)
}

// lockProject serialises membership changes of one project, so two
// concurrent demotions cannot both see the other owner still there.
func lockProject(ctx context.Context, tx pgx.Tx, tenant, project string) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM gateway.projects WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, project)
	return err
}

// checkOwnerLeft refuses a change that leaves project without an owner.
func checkOwnerLeft(ctx context.Context, tx pgx.Tx, tenant, project string) error {
	var owners int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM gateway.memberships
		WHERE tenant_id = $1 AND project_id = $2 AND role = 'owner'`, tenant, project).Scan(&owners)
	if err != nil {
		return err
	}
	if owners == 0 {
		return apierr.New(apierr.ErrConflict, "project %s would have no owner left", project)
	}
	return nil
}

func wrapUnlessClassified(op string, err error) error {
	var cls *apierr.Error
	if err == nil || errors.As(err, &cls) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}
