package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
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
	err = s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		pr, err := lockedProject(ctx, tx, p.TenantID, project)
		if err != nil || pr == nil {
			return nil, cmpErr(err, notFound("project", project))
		}
		var was string
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT role FROM gateway.memberships WHERE tenant_id = $1 AND project_id = $2 AND user_id = $3), '')`,
			p.TenantID, project, u.ID).Scan(&was); err != nil {
			return nil, err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO gateway.memberships (project_id, user_id, tenant_id, role) VALUES ($1, $2, $3, $4)
			ON CONFLICT (project_id, user_id) DO UPDATE SET role = EXCLUDED.role RETURNING joined_at`,
			project, u.ID, p.TenantID, in.Role).Scan(&m.JoinedAt); err != nil {
			return nil, err
		}
		if err := checkOwnerLeft(ctx, tx, p.TenantID, project); err != nil || was == in.Role {
			return nil, err // the same role again: nothing changed
		}
		now := &memberState{UserID: u.ID, Email: u.Email, Name: u.Name, Role: in.Role}
		if was == "" {
			return []audit.Entry{memberEntry(p, pr, "member.add", nil, now)}, nil
		}
		before := *now
		before.Role = was
		return []audit.Entry{memberEntry(p, pr, "member.update", &before, now)}, nil
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
	err := s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		// The project's row lock serialises membership changes of one
		// project, so two concurrent demotions cannot both see the other
		// owner still there.
		pr, err := lockedProject(ctx, tx, p.TenantID, project)
		if err != nil || pr == nil {
			return nil, cmpErr(err, notFound("project", project))
		}
		var gone memberState
		err = tx.QueryRow(ctx, `DELETE FROM gateway.memberships m USING gateway.users u
			WHERE m.tenant_id = $1 AND m.project_id = $2 AND m.user_id = $3 AND u.tenant_id = m.tenant_id AND u.id = m.user_id
			RETURNING u.id::text, u.email, u.name, m.role`, p.TenantID, project, user).Scan(&gone.UserID, &gone.Email, &gone.Name, &gone.Role)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, notFound("member", user)
		}
		if err != nil {
			return nil, err
		}
		if err := checkOwnerLeft(ctx, tx, p.TenantID, project); err != nil {
			return nil, err
		}
		return []audit.Entry{memberEntry(p, pr, "member.remove", &gone, nil)}, nil
	})
	return wrapUnlessClassified("remove member", err)
}

// memberState is a membership as the audit log shows it.
type memberState struct {
	UserID string `json:"userId"`
	Email  string `json:"email"`
	Name   string `json:"name"`
	Role   string `json:"role"`
}

// memberEntry is an entry about a member of project pr: the target is the
// project, so its log holds its members' changes too.
func memberEntry(p Principal, pr *projectState, action string, before, after *memberState) audit.Entry {
	e := audit.Entry{Tenant: p.TenantID, Actor: p.Actor(), Action: action, Target: events.AuditTarget{Type: "project", ID: pr.ID, Name: pr.Name}}
	if before != nil {
		e.Before = before
	}
	if after != nil {
		e.After = after
	}
	return e
}

// cmpErr is err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
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
