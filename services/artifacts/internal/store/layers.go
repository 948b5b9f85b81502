package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/resolve"
)

// GetInstructions returns the instructions of a scope (zero content when
// none are saved).
func (s *Store) GetInstructions(ctx context.Context, tenant, scope, project string) (events.Instructions, error) {
	if err := checkScope(scope, project, "", false); err != nil {
		return events.Instructions{}, err
	}
	in := events.Instructions{Scope: scope, ProjectID: project}
	err := s.DB.QueryRow(ctx, `SELECT content, enabled, updated_at FROM artifacts.instructions
		WHERE tenant_id = $1 AND scope = $2 AND project_id = $3`, tenant, scope, project).Scan(&in.Content, &in.Enabled, &in.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return in, nil
	}
	return in, mapErr(err)
}

// PutInstructions saves the instructions of a scope; blank content deletes.
func (s *Store) PutInstructions(ctx context.Context, tenant string, in events.Instructions) (int64, error) {
	if err := checkScope(in.Scope, in.ProjectID, "", false); err != nil {
		return 0, err
	}
	if len(in.Content) > 256<<10 {
		return 0, fmt.Errorf("%w: instructions longer than 256 KiB", ErrInvalid)
	}
	return s.change(ctx, tenant, instructionsTarget(tenant, in.Scope, in.ProjectID), func(tx pgx.Tx) error {
		if strings.TrimSpace(in.Content) == "" {
			_, err := tx.Exec(ctx, `DELETE FROM artifacts.instructions WHERE tenant_id = $1 AND scope = $2 AND project_id = $3`,
				tenant, in.Scope, in.ProjectID)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO artifacts.instructions (tenant_id, scope, project_id, content, enabled)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, scope, project_id)
			DO UPDATE SET content = excluded.content, enabled = excluded.enabled, updated_at = now()`,
			tenant, in.Scope, in.ProjectID, in.Content, in.Enabled)
		return err
	})
}

func checkScope(scope, project, profile string, profiles bool) error {
	switch {
	case scope == events.ScopeGlobal && project == "" && profile == "":
	case scope == events.ScopeProject && project != "" && profile == "":
	case profiles && scope == events.ScopeProfile && profile != "" && project == "":
	default:
		return fmt.Errorf("%w: scope %q with projectId %q and profileId %q", ErrInvalid, scope, project, profile)
	}
	if len(project) > 128 || len(profile) > 128 {
		return fmt.Errorf("%w: id too long", ErrInvalid)
	}
	return nil
}

// GetPermissions returns one layer's rules (empty lists when none).
func (s *Store) GetPermissions(ctx context.Context, tenant, scope, project, profile string) (events.PermissionSet, error) {
	if err := checkScope(scope, project, profile, true); err != nil {
		return events.PermissionSet{}, err
	}
	set := events.PermissionSet{Scope: scope, ProjectID: project, ProfileID: profile,
		PermissionRules: events.PermissionRules{Allow: []string{}, Deny: []string{}}}
	err := s.DB.QueryRow(ctx, `SELECT allow, deny FROM artifacts.permission_sets
		WHERE tenant_id = $1 AND scope = $2 AND project_id = $3 AND profile_id = $4`, tenant, scope, project, profile).
		Scan(&set.Allow, &set.Deny)
	if errors.Is(err, pgx.ErrNoRows) {
		return set, nil
	}
	return set, mapErr(err)
}

// PutPermissions saves one layer; empty allow and deny delete it.
func (s *Store) PutPermissions(ctx context.Context, tenant string, set events.PermissionSet) (events.PermissionSet, int64, error) {
	if err := checkScope(set.Scope, set.ProjectID, set.ProfileID, true); err != nil {
		return set, 0, err
	}
	var err error
	if set.Allow, err = resolve.NormalizePatterns(set.Allow); err != nil {
		return set, 0, fmt.Errorf("%w: allow: %v", ErrInvalid, err)
	}
	if set.Deny, err = resolve.NormalizePatterns(set.Deny); err != nil {
		return set, 0, fmt.Errorf("%w: deny: %v", ErrInvalid, err)
	}
	rev, err := s.change(ctx, tenant, permissionsTarget(tenant, set), func(tx pgx.Tx) error {
		if len(set.Allow)+len(set.Deny) == 0 {
			_, err := tx.Exec(ctx, `DELETE FROM artifacts.permission_sets WHERE tenant_id = $1 AND scope = $2
				AND project_id = $3 AND profile_id = $4`, tenant, set.Scope, set.ProjectID, set.ProfileID)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO artifacts.permission_sets (tenant_id, scope, project_id, profile_id, allow, deny)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, scope, project_id, profile_id)
			DO UPDATE SET allow = excluded.allow, deny = excluded.deny, updated_at = now()`,
			tenant, set.Scope, set.ProjectID, set.ProfileID, set.Allow, set.Deny)
		return err
	})
	return set, rev, err
}

// ResolvePermissions merges global → project → profile.
func (s *Store) ResolvePermissions(ctx context.Context, tenant, project, profile string) (events.PermissionRules, error) {
	layers := []events.PermissionRules{}
	g, err := s.GetPermissions(ctx, tenant, events.ScopeGlobal, "", "")
	if err != nil {
		return events.PermissionRules{}, err
	}
	layers = append(layers, g.PermissionRules)
	if project != "" {
		p, err := s.GetPermissions(ctx, tenant, events.ScopeProject, project, "")
		if err != nil {
			return events.PermissionRules{}, err
		}
		layers = append(layers, p.PermissionRules)
	}
	if profile != "" {
		p, err := s.GetPermissions(ctx, tenant, events.ScopeProfile, "", profile)
		if err != nil {
			return events.PermissionRules{}, err
		}
		layers = append(layers, p.PermissionRules)
	}
	return resolve.MergePermissions(layers...), nil
}
