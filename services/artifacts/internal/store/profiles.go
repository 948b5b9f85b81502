package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/resolve"
	"clopen.dev/services/artifacts/internal/skills"
)

// ListProfiles returns the tenant's profiles with their items.
func (s *Store) ListProfiles(ctx context.Context, tenant string) ([]events.Profile, error) {
	rows, err := s.DB.Query(ctx, `SELECT id::text, slug, name, description, updated_at FROM artifacts.profiles
		WHERE tenant_id = $1 ORDER BY name, id`, tenant)
	if err != nil {
		return nil, mapErr(err)
	}
	out := []events.Profile{}
	for rows.Next() {
		var p events.Profile
		if err := rows.Scan(&p.ID, &p.Slug, &p.Name, &p.Description, &p.UpdatedAt); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, p)
	}
	rows.Close()
	for i := range out {
		if out[i].Items, err = profileItems(ctx, s.DB, tenant, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetProfile returns one profile.
func (s *Store) GetProfile(ctx context.Context, tenant, id string) (events.Profile, error) {
	if _, err := uuid.Parse(id); err != nil {
		return events.Profile{}, ErrNotFound
	}
	return readProfile(ctx, s.DB, tenant, id)
}

// readProfile reads profile id of tenant with its items through q.
func readProfile(ctx context.Context, q querier, tenant, id string) (events.Profile, error) {
	var p events.Profile
	err := q.QueryRow(ctx, `SELECT id::text, slug, name, description, updated_at FROM artifacts.profiles
		WHERE tenant_id = $1 AND id = $2`, tenant, id).Scan(&p.ID, &p.Slug, &p.Name, &p.Description, &p.UpdatedAt)
	if err != nil {
		return p, mapErr(err)
	}
	p.Items, err = profileItems(ctx, q, tenant, id)
	return p, err
}

// querier reads: the pool, or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func profileItems(ctx context.Context, q querier, tenant, id string) ([]events.ProfileItem, error) {
	rows, err := q.Query(ctx, `SELECT artifact_type, ref FROM artifacts.profile_items WHERE tenant_id = $1 AND profile_id = $2
		ORDER BY artifact_type, ref`, tenant, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []events.ProfileItem{}
	for rows.Next() {
		var it events.ProfileItem
		if err := rows.Scan(&it.Type, &it.Ref); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// PutProfile creates (empty ID) or replaces a profile and its items. The
// slug is derived from the name when empty, deduplicated with -2…-999.
func (s *Store) PutProfile(ctx context.Context, tenant string, p events.Profile) (events.Profile, int64, error) {
	if strings.TrimSpace(p.Name) == "" {
		return p, 0, fmt.Errorf("%w: name is required", ErrInvalid)
	}
	for _, it := range p.Items {
		if (it.Type != events.ArtifactSkill && it.Type != events.ArtifactSubagent && it.Type != events.ArtifactMCP) || !skills.ValidSlug(it.Ref) {
			return p, 0, fmt.Errorf("%w: item %s %q", ErrInvalid, it.Type, it.Ref)
		}
	}
	creating := p.ID == ""
	if creating {
		p.ID = uuid.NewString()
	} else if _, err := uuid.Parse(p.ID); err != nil {
		return p, 0, ErrNotFound
	}
	action := "profile.update"
	if creating {
		action = "profile.create"
	}
	rev, err := s.change(ctx, tenant, profileTarget(action, tenant, p.ID), func(tx pgx.Tx) error {
		slug, err := freeProfileSlug(ctx, tx, tenant, p.ID, p.Slug, p.Name)
		if err != nil {
			return err
		}
		p.Slug = slug
		if creating {
			_, err = tx.Exec(ctx, `INSERT INTO artifacts.profiles (tenant_id, id, slug, name, description) VALUES ($1, $2, $3, $4, $5)`,
				tenant, p.ID, p.Slug, p.Name, p.Description)
		} else {
			err = affected(tx.Exec(ctx, `UPDATE artifacts.profiles SET slug = $3, name = $4, description = $5, updated_at = now()
				WHERE tenant_id = $1 AND id = $2`, tenant, p.ID, p.Slug, p.Name, p.Description))
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM artifacts.profile_items WHERE tenant_id = $1 AND profile_id = $2`, tenant, p.ID); err != nil {
			return err
		}
		for _, it := range p.Items {
			if _, err := tx.Exec(ctx, `INSERT INTO artifacts.profile_items (tenant_id, profile_id, artifact_type, ref)
				VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, tenant, p.ID, it.Type, it.Ref); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return p, 0, err
	}
	got, err := s.GetProfile(ctx, tenant, p.ID)
	return got, rev, err
}

func freeProfileSlug(ctx context.Context, tx pgx.Tx, tenant, id, slug, name string) (string, error) {
	if slug == "" {
		slug = slugify(name)
	} else if !skills.ValidSlug(slug) {
		return "", fmt.Errorf("%w: slug %q", ErrInvalid, slug)
	}
	base := slug
	for n := 1; n < 1000; n++ {
		cand := base
		if n > 1 {
			suffix := fmt.Sprintf("-%d", n)
			cand = strings.TrimRight(base[:min(len(base), 64-len(suffix))], "-") + suffix
		}
		var other string
		err := tx.QueryRow(ctx, `SELECT id::text FROM artifacts.profiles WHERE tenant_id = $1 AND slug = $2`, tenant, cand).Scan(&other)
		if errors.Is(err, pgx.ErrNoRows) || other == id {
			return cand, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: no free slug for %q", ErrConflict, name)
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 64 {
		out = strings.Trim(out[:64], "-")
	}
	if out == "" {
		return "profile"
	}
	return out
}

// DeleteProfile removes a profile (items, project defaults and its
// permission overlay with it).
func (s *Store) DeleteProfile(ctx context.Context, tenant, id string) (int64, error) {
	if _, err := uuid.Parse(id); err != nil {
		return 0, ErrNotFound
	}
	return s.change(ctx, tenant, profileTarget("profile.delete", tenant, id), func(tx pgx.Tx) error {
		if err := affected(tx.Exec(ctx, `DELETE FROM artifacts.profiles WHERE tenant_id = $1 AND id = $2`, tenant, id)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM artifacts.permission_sets WHERE tenant_id = $1 AND scope = 'profile' AND profile_id = $2`, tenant, id)
		return err
	})
}

// ProjectDefault returns the project's default profile id, "" for none.
func (s *Store) ProjectDefault(ctx context.Context, tenant, project string) (string, error) {
	var id string
	err := s.DB.QueryRow(ctx, `SELECT profile_id::text FROM artifacts.project_defaults WHERE tenant_id = $1 AND project_id = $2`,
		tenant, project).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, mapErr(err)
}

// SetProjectDefault sets (or, with an empty profile, clears) the project's
// default profile.
func (s *Store) SetProjectDefault(ctx context.Context, tenant, project, profile string) (int64, error) {
	if project == "" || len(project) > 128 {
		return 0, fmt.Errorf("%w: projectId", ErrInvalid)
	}
	return s.change(ctx, tenant, projectTarget("project.default_profile.set", tenant, project), func(tx pgx.Tx) error {
		if profile == "" {
			_, err := tx.Exec(ctx, `DELETE FROM artifacts.project_defaults WHERE tenant_id = $1 AND project_id = $2`, tenant, project)
			return err
		}
		if _, err := uuid.Parse(profile); err != nil {
			return ErrNotFound
		}
		_, err := tx.Exec(ctx, `INSERT INTO artifacts.project_defaults (tenant_id, project_id, profile_id) VALUES ($1, $2, $3)
			ON CONFLICT (tenant_id, project_id) DO UPDATE SET profile_id = excluded.profile_id`, tenant, project, profile)
		if err != nil && errors.Is(mapErr(err), ErrInvalid) {
			return ErrNotFound // no such profile for this tenant
		}
		return err
	})
}

// ForgetProject deletes every row scoped to project: its instructions,
// permission layer, default profile, source credential, MCP servers and
// integration accounts. Forgetting a project with none is
// not an error, so a retried project deletion succeeds.
func (s *Store) ForgetProject(ctx context.Context, tenant, project string) (int64, error) {
	if project == "" || len(project) > 128 {
		return 0, fmt.Errorf("%w: projectId", ErrInvalid)
	}
	return s.change(ctx, tenant, projectTarget("project.artifacts.delete", tenant, project), func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM artifacts.instructions WHERE tenant_id = $1 AND scope = 'project' AND project_id = $2`,
			`DELETE FROM artifacts.permission_sets WHERE tenant_id = $1 AND scope = 'project' AND project_id = $2`,
			`DELETE FROM artifacts.project_defaults WHERE tenant_id = $1 AND project_id = $2`,
			`DELETE FROM artifacts.source_credentials WHERE tenant_id = $1 AND project_id = $2`,
			`DELETE FROM artifacts.integration_accounts WHERE tenant_id = $1 AND project_id = $2`, // and their projections
			`DELETE FROM artifacts.mcp_servers WHERE tenant_id = $1 AND project_id = $2`,
		} {
			if _, err := tx.Exec(ctx, q, tenant, project); err != nil {
				return err
			}
		}
		return nil
	})
}

// EffectiveProfile resolves the profile of a run: the requested one, else
// the project's default; nil for none. A profile id the tenant does not
// have is ErrNotFound.
func (s *Store) EffectiveProfile(ctx context.Context, tenant, project, requested string) (*resolve.Profile, error) {
	id := requested
	if id == "" && project != "" {
		var err error
		if id, err = s.ProjectDefault(ctx, tenant, project); err != nil {
			return nil, err
		}
	}
	if id == "" {
		return nil, nil
	}
	p, err := s.GetProfile(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return resolve.NewProfile(p.ID, p.Items), nil
}
