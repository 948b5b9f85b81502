package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/content"
	"clopen.dev/services/artifacts/internal/frontmatter"
	"clopen.dev/services/artifacts/internal/skills"
)

const skillColumns = `slug, name, description, triggers, argument_hint, uses, enabled, source, updated_at`

func scanSkill(row pgx.Row) (events.Skill, error) {
	var s events.Skill
	err := row.Scan(&s.Slug, &s.Name, &s.Description, &s.Triggers, &s.ArgumentHint, &s.Uses, &s.Enabled, &s.Source, &s.UpdatedAt)
	return s, mapErr(err)
}

// ListSkills returns the tenant's skills without bodies, by slug.
func (s *Store) ListSkills(ctx context.Context, tenant string) ([]events.Skill, error) {
	rows, err := s.DB.Query(ctx, `SELECT `+skillColumns+` FROM artifacts.skills WHERE tenant_id = $1 ORDER BY slug`, tenant)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []events.Skill{}
	for rows.Next() {
		sk, err := scanSkill(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sk)
	}
	return out, rows.Err()
}

// GetSkill returns one skill with every field of its document.
func (s *Store) GetSkill(ctx context.Context, tenant, slug string) (events.Skill, error) {
	row, err := scanSkill(s.DB.QueryRow(ctx, `SELECT `+skillColumns+` FROM artifacts.skills WHERE tenant_id = $1 AND slug = $2`, tenant, slug))
	if err != nil {
		return events.Skill{}, err
	}
	files, err := s.Docs.ReadSkill(tenant, slug)
	if err != nil {
		return events.Skill{}, fmt.Errorf("read skill %s: %w", slug, err)
	}
	full, _, err := skills.Parse(slug, files["SKILL.md"])
	if err != nil {
		return events.Skill{}, err
	}
	full.Enabled, full.Source, full.UpdatedAt = row.Enabled, row.Source, row.UpdatedAt
	return full, nil
}

// PutSkill creates or replaces a skill (see events.SkillPut).
func (s *Store) PutSkill(ctx context.Context, tenant string, put events.SkillPut) (events.Skill, int64, error) {
	sk := put.Skill
	dir, err := s.Docs.SkillDir(tenant, sk.Slug)
	if err != nil {
		return events.Skill{}, 0, err
	}
	var existing *frontmatter.Doc
	if files, err := s.Docs.ReadSkill(tenant, sk.Slug); err == nil {
		existing, _ = frontmatter.Parse(files["SKILL.md"])
	}
	var content string
	if put.Document != "" {
		parsed, _, err := skills.Parse(sk.Slug, put.Document)
		if err != nil {
			return events.Skill{}, 0, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		parsed.Source = sk.Source
		sk, content = parsed, put.Document
	} else {
		if sk.Name == "" {
			sk.Name = sk.Slug
		}
		if len(sk.Triggers) == 0 {
			sk.Triggers = []string{events.SkillTriggerAuto}
		}
		if err := skills.Validate(sk); err != nil {
			return events.Skill{}, 0, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		content = skills.Render(existing, sk)
	}
	if sk.Source == "" {
		sk.Source = "custom"
	}
	rev, err := s.change(ctx, tenant, s.skillTarget("skill.put", tenant, sk.Slug), func(tx pgx.Tx) error {
		enabled := true
		_ = tx.QueryRow(ctx, `SELECT enabled FROM artifacts.skills WHERE tenant_id = $1 AND slug = $2`, tenant, sk.Slug).Scan(&enabled)
		if put.Enabled != nil {
			enabled = *put.Enabled
		}
		sk.Enabled = enabled
		if err := upsertSkill(ctx, tx, tenant, sk, ""); err != nil {
			return err
		}
		return s.Docs.Write(filepath.Join(dir, "SKILL.md"), content)
	})
	if err != nil {
		return events.Skill{}, 0, err
	}
	sk.UpdatedAt = time.Now().UTC()
	return sk, rev, nil
}

func upsertSkill(ctx context.Context, tx pgx.Tx, tenant string, sk events.Skill, importedFrom string) error {
	uses := sk.Uses
	if uses == nil {
		uses = []string{}
	}
	_, err := tx.Exec(ctx, `INSERT INTO artifacts.skills (tenant_id, slug, name, description, triggers, argument_hint, uses,
		enabled, source, imported_from) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, nullif($10, ''))
		ON CONFLICT (tenant_id, slug) DO UPDATE SET name = excluded.name, description = excluded.description,
			triggers = excluded.triggers, argument_hint = excluded.argument_hint, uses = excluded.uses,
			enabled = excluded.enabled, source = excluded.source,
			imported_from = coalesce(excluded.imported_from, artifacts.skills.imported_from), updated_at = now()`,
		tenant, sk.Slug, sk.Name, sk.Description, sk.Triggers, sk.ArgumentHint, uses, sk.Enabled, sk.Source, importedFrom)
	return err
}

// DeleteSkill removes a skill and its folder (an adopted link only).
func (s *Store) DeleteSkill(ctx context.Context, tenant, slug string) (int64, error) {
	dir, err := s.Docs.SkillDir(tenant, slug)
	if err != nil {
		return 0, err
	}
	return s.change(ctx, tenant, s.skillTarget("skill.delete", tenant, slug), func(tx pgx.Tx) error {
		if err := affected(tx.Exec(ctx, `DELETE FROM artifacts.skills WHERE tenant_id = $1 AND slug = $2`, tenant, slug)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM artifacts.profile_items WHERE tenant_id = $1 AND artifact_type = 'skill' AND ref = $2`, tenant, slug)
		return err
	}, func() { _ = s.Docs.Remove(dir) })
}

// LoadSkills returns every skill of the tenant with its folder's files, for
// plans and expansion. A skill whose document cannot be read is skipped and
// named in the returned warnings.
func (s *Store) LoadSkills(ctx context.Context, tenant string) ([]content.Skill, []string, error) {
	list, err := s.ListSkills(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	var out []content.Skill
	var warnings []string
	for _, row := range list {
		files, err := s.Docs.ReadSkill(tenant, row.Slug)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skill %s: %v", row.Slug, err))
			continue
		}
		full, _, err := skills.Parse(row.Slug, files["SKILL.md"])
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skill %s: %v", row.Slug, err))
			continue
		}
		full.Enabled, full.Source, full.UpdatedAt = row.Enabled, row.Source, row.UpdatedAt
		out = append(out, content.Skill{Skill: full, Files: files})
	}
	return out, warnings, nil
}

// ImportCommands imports legacy commands as slash skills, idempotently.
func (s *Store) ImportCommands(ctx context.Context, tenant string, cmds []events.LegacyCommand) (events.CommandsImported, int64, error) {
	loaded, _, err := s.LoadSkills(ctx, tenant)
	if err != nil {
		return events.CommandsImported{}, 0, err
	}
	existing := map[string]events.Skill{}
	for _, sk := range loaded {
		existing[sk.Slug] = sk.Skill
	}
	rows, err := s.ListSkills(ctx, tenant) // skills whose document is unreadable still hold their slug
	if err != nil {
		return events.CommandsImported{}, 0, err
	}
	for _, r := range rows {
		if _, ok := existing[r.Slug]; !ok {
			existing[r.Slug] = r
		}
	}
	prior := map[string]string{}
	prows, err := s.DB.Query(ctx, `SELECT imported_from, slug FROM artifacts.skills WHERE tenant_id = $1 AND imported_from IS NOT NULL`, tenant)
	if err != nil {
		return events.CommandsImported{}, 0, err
	}
	for prows.Next() {
		var from, slug string
		if err := prows.Scan(&from, &slug); err != nil {
			prows.Close()
			return events.CommandsImported{}, 0, err
		}
		prior[from] = slug
	}
	prows.Close()
	imported, warnings := skills.ImportCommands(cmds, existing, prior)
	out := events.CommandsImported{Slugs: map[string]string{}, Warnings: warnings}
	slugs := make([]string, 0, len(imported))
	for _, im := range imported {
		slugs = append(slugs, im.Skill.Slug)
	}
	rev, err := s.change(ctx, tenant, s.skillsTarget("skill.import", tenant, slugs), func(tx pgx.Tx) error {
		for _, im := range imported {
			var doc *frontmatter.Doc
			if files, err := s.Docs.ReadSkill(tenant, im.Skill.Slug); err == nil {
				doc, _ = frontmatter.Parse(files["SKILL.md"])
			}
			if err := upsertSkill(ctx, tx, tenant, im.Skill, im.Command); err != nil {
				return err
			}
			dir, err := s.Docs.SkillDir(tenant, im.Skill.Slug)
			if err != nil {
				return err
			}
			if err := s.Docs.Write(filepath.Join(dir, "SKILL.md"), skills.Render(doc, im.Skill)); err != nil {
				return err
			}
			out.Slugs[im.Command] = im.Skill.Slug
		}
		return nil
	})
	if errors.Is(err, ErrConflict) {
		return out, 0, fmt.Errorf("%w: two commands map to one skill", err)
	}
	return out, rev, err
}

// IndexSkill records a skill whose document is already in place (an
// adopted link) without writing it.
func (s *Store) IndexSkill(ctx context.Context, tenant string, sk events.Skill) (int64, error) {
	return s.change(ctx, tenant, s.skillTarget("skill.adopt", tenant, sk.Slug), func(tx pgx.Tx) error {
		return upsertSkill(ctx, tx, tenant, sk, "")
	})
}
