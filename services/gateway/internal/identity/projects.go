package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
)

// projectSelect reads projects with the role of user $2 in each (NULL when
// not a member); callers add the tenant filter on $1.
const projectSelect = `SELECT p.id, p.name, coalesce(p.default_profile_id, ''), coalesce(p.created_by::text, ''), p.created_at, coalesce(m.role, ''),
	p.source_kind, coalesce(p.source_url, ''), coalesce(p.source_branch, ''), coalesce(p.base_snapshot_id, ''), coalesce(p.base_commit, '')
	FROM gateway.projects p
	LEFT JOIN gateway.memberships m ON m.tenant_id = p.tenant_id AND m.project_id = p.id AND m.user_id::text = $2
	WHERE p.tenant_id = $1`

func scanProject(r pgx.Row) (api.Project, error) {
	var p api.Project
	err := r.Scan(&p.ID, &p.Name, &p.DefaultProfileID, &p.CreatedBy, &p.CreatedAt, &p.Role,
		&p.Source.Kind, &p.Source.URL, &p.Source.Branch, &p.BaseSnapshot, &p.BaseCommit)
	return p, err
}

// ListProjects returns the projects p may see, by name: every project of
// the tenant for an admin, the ones p is a member of otherwise.
func (s *Store) ListProjects(ctx context.Context, p Principal) ([]api.Project, error) {
	q := projectSelect
	if !p.IsAdmin() {
		q += ` AND m.user_id IS NOT NULL`
	}
	rows, err := s.db.Query(ctx, q+` ORDER BY p.name`, p.TenantID, p.UserID)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (api.Project, error) { return scanProject(r) })
}

// Project returns project id if p may use it: an admin any project of its
// tenant, a member the projects it belongs to. Any other is ErrNotFound.
func (s *Store) Project(ctx context.Context, p Principal, id string) (api.Project, error) {
	if !validID(id) {
		return api.Project{}, notFound("project", id)
	}
	pr, err := scanProject(s.db.QueryRow(ctx, projectSelect+` AND p.id = $3`, p.TenantID, p.UserID, id))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return pr, notFound("project", id)
	case err != nil:
		return pr, fmt.Errorf("select project: %w", err)
	case pr.Role == "" && !p.IsAdmin():
		return api.Project{}, notFound("project", id)
	}
	return pr, nil
}

// ManagedProject is Project for changes: it also requires p to administer
// the tenant or own the project (ErrForbidden for a plain member).
func (s *Store) ManagedProject(ctx context.Context, p Principal, id string) (api.Project, error) {
	pr, err := s.Project(ctx, p, id)
	if err == nil && !p.IsAdmin() && pr.Role != api.ProjectOwner {
		return api.Project{}, apierr.New(apierr.ErrForbidden, "only the project's owners and tenant admins may change project %s", id)
	}
	return pr, err
}

// CreateProject creates a project in p's tenant with p as its owner.
func (s *Store) CreateProject(ctx context.Context, p Principal, in api.CreateProject) (api.Project, error) {
	name, err := projectName(in.Name)
	if err != nil {
		return api.Project{}, err
	}
	pr := api.Project{ID: newID(), Name: name, CreatedBy: p.UserID, Role: api.ProjectOwner, Source: api.ProjectSource{Kind: api.SourceEmpty}}
	err = s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		if err := tx.QueryRow(ctx, `INSERT INTO gateway.projects (id, tenant_id, name, created_by) VALUES ($1, $2, $3, $4) RETURNING created_at`,
			pr.ID, p.TenantID, name, p.UserID).Scan(&pr.CreatedAt); err != nil {
			return nil, err
		}
		_, err := tx.Exec(ctx, `INSERT INTO gateway.memberships (project_id, user_id, tenant_id, role) VALUES ($1, $2, $3, 'owner')`,
			pr.ID, p.UserID, p.TenantID)
		return []audit.Entry{projectEntry(p.TenantID, p.Actor(), "project.create", nil,
			&projectState{ID: pr.ID, Name: pr.Name, Source: pr.Source})}, err
	})
	if uniqueViolation(err) {
		return api.Project{}, apierr.New(apierr.ErrConflict, "a project named %q already exists", name)
	}
	if err != nil {
		return api.Project{}, fmt.Errorf("create project: %w", err)
	}
	return pr, nil
}

// UpdateProject changes project id (see ManagedProject for who may).
func (s *Store) UpdateProject(ctx context.Context, p Principal, id string, in api.UpdateProject) (api.Project, error) {
	pr, err := s.ManagedProject(ctx, p, id)
	if err != nil {
		return pr, err
	}
	if in.Name != nil {
		if pr.Name, err = projectName(*in.Name); err != nil {
			return api.Project{}, err
		}
	}
	if in.DefaultProfileID != nil {
		pr.DefaultProfileID = strings.TrimSpace(*in.DefaultProfileID)
	}
	err = s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		before, err := lockedProject(ctx, tx, p.TenantID, id)
		if err != nil || before == nil {
			return nil, cmpErr(err, notFound("project", id))
		}
		if _, err := tx.Exec(ctx, `UPDATE gateway.projects SET name = $3, default_profile_id = nullif($4, '')
			WHERE tenant_id = $1 AND id = $2`, p.TenantID, id, pr.Name, pr.DefaultProfileID); err != nil {
			return nil, err
		}
		after := *before
		after.Name, after.DefaultProfileID = pr.Name, pr.DefaultProfileID
		if after == *before {
			return nil, nil
		}
		return []audit.Entry{projectEntry(p.TenantID, p.Actor(), "project.update", before, &after)}, nil
	})
	if uniqueViolation(err) {
		return api.Project{}, apierr.New(apierr.ErrConflict, "a project named %q already exists", pr.Name)
	}
	if err != nil {
		return api.Project{}, fmt.Errorf("update project: %w", err)
	}
	return pr, nil
}

// BaseChange is a new base for a project: its snapshot (and commit, for a
// git project), the base it replaces (a compare-and-set, so two applies
// racing cannot both win), where its files now come from (nil: unchanged),
// and the action the audit log records it as.
type BaseChange struct {
	Prev, Snapshot, Commit string
	Source                 *api.ProjectSource
	Action                 string // project.archive.upload, project.source.set, project.apply
}

// SetBase makes c project id's base in tenant, as actor; ErrConflict when
// the base moved meanwhile. It checks no permission: callers have checked
// the caller's right first.
func (s *Store) SetBase(ctx context.Context, actor events.AuditActor, tenant, id string, c BaseChange) error {
	err := s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		before, err := lockedProject(ctx, tx, tenant, id)
		if err != nil || before == nil {
			return nil, cmpErr(err, notFound("project", id))
		}
		if before.BaseSnapshot != c.Prev {
			return nil, apierr.New(apierr.ErrConflict, "the base of project %s changed meanwhile; read it again and retry", id)
		}
		after := *before
		after.BaseSnapshot, after.BaseCommit = c.Snapshot, c.Commit
		if c.Source != nil {
			after.Source = *c.Source
		}
		_, err = tx.Exec(ctx, `UPDATE gateway.projects SET base_snapshot_id = nullif($3, ''), base_commit = nullif($4, ''),
			base_updated_at = now(), source_kind = $5, source_url = nullif($6, ''), source_branch = nullif($7, '')
			WHERE tenant_id = $1 AND id = $2`, tenant, id, after.BaseSnapshot, after.BaseCommit, after.Source.Kind, after.Source.URL,
			after.Source.Branch)
		return []audit.Entry{projectEntry(tenant, actor, c.Action, before, &after)}, err
	})
	return wrapUnlessClassified("set project base", err)
}

// ClearDefaultProfile forgets profile as the default of every project of
// tenant that had it, once actor deleted the profile; each project changed
// is audited.
func (s *Store) ClearDefaultProfile(ctx context.Context, actor events.AuditActor, tenant, profile string) error {
	err := s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		rows, err := tx.Query(ctx, `SELECT id::text FROM gateway.projects WHERE tenant_id = $1 AND default_profile_id = $2 FOR UPDATE`,
			tenant, profile)
		if err != nil {
			return nil, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		var entries []audit.Entry
		for _, id := range ids {
			before, err := lockedProject(ctx, tx, tenant, id)
			if err != nil || before == nil {
				return nil, err
			}
			if _, err := tx.Exec(ctx, `UPDATE gateway.projects SET default_profile_id = NULL WHERE tenant_id = $1 AND id = $2`,
				tenant, id); err != nil {
				return nil, err
			}
			after := *before
			after.DefaultProfileID = ""
			entries = append(entries, projectEntry(tenant, actor, "project.update", before, &after))
		}
		return entries, nil
	})
	return wrapUnlessClassified("clear default profile", err)
}

// DeleteProject deletes project id and its memberships (see ManagedProject
// for who may). Its chat sessions live in streammgr; the caller deletes them
// first.
func (s *Store) DeleteProject(ctx context.Context, p Principal, id string) error {
	if _, err := s.ManagedProject(ctx, p, id); err != nil {
		return err
	}
	err := s.change(ctx, func(tx pgx.Tx) ([]audit.Entry, error) {
		before, err := lockedProject(ctx, tx, p.TenantID, id)
		if err != nil || before == nil {
			return nil, cmpErr(err, notFound("project", id))
		}
		if _, err := tx.Exec(ctx, `DELETE FROM gateway.projects WHERE tenant_id = $1 AND id = $2`, p.TenantID, id); err != nil {
			return nil, err
		}
		return []audit.Entry{projectEntry(p.TenantID, p.Actor(), "project.delete", before, nil)}, nil
	})
	return wrapUnlessClassified("delete project", err)
}

func projectName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return "", apierr.New(apierr.ErrInvalid, "name: want 1 to 200 characters")
	}
	return name, nil
}
