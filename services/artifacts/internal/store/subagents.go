package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/frontmatter"
	"clopen.dev/services/artifacts/internal/skills"
)

const subagentColumns = `slug, name, description, model, tools, model_by_engine, tools_by_engine, enabled, updated_at`

func scanSubagent(row pgx.Row) (events.Subagent, error) {
	var a events.Subagent
	var models, tools []byte
	err := row.Scan(&a.Slug, &a.Name, &a.Description, &a.Model, &a.Tools, &models, &tools, &a.Enabled, &a.UpdatedAt)
	if err != nil {
		return a, mapErr(err)
	}
	_ = json.Unmarshal(models, &a.ModelByEngine)
	_ = json.Unmarshal(tools, &a.ToolsByEngine)
	if len(a.ModelByEngine) == 0 {
		a.ModelByEngine = nil
	}
	if len(a.ToolsByEngine) == 0 {
		a.ToolsByEngine = nil
	}
	if len(a.Tools) == 0 {
		a.Tools = nil
	}
	return a, nil
}

// ListSubagents returns the tenant's subagents with their bodies.
func (s *Store) ListSubagents(ctx context.Context, tenant string) ([]events.Subagent, error) {
	rows, err := s.DB.Query(ctx, `SELECT `+subagentColumns+` FROM artifacts.subagents WHERE tenant_id = $1 ORDER BY slug`, tenant)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []events.Subagent
	for rows.Next() {
		a, err := scanSubagent(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Body = s.subagentBody(tenant, out[i].Slug)
	}
	if out == nil {
		out = []events.Subagent{}
	}
	return out, nil
}

func (s *Store) subagentBody(tenant, slug string) string {
	path, err := s.Docs.SubagentFile(tenant, slug)
	if err != nil {
		return ""
	}
	src, err := s.Docs.ReadFile(tenant, path)
	if err != nil {
		return ""
	}
	if doc, err := frontmatter.Parse(src); err == nil {
		return doc.Body
	}
	return src
}

// GetSubagent returns one subagent.
func (s *Store) GetSubagent(ctx context.Context, tenant, slug string) (events.Subagent, error) {
	a, err := scanSubagent(s.DB.QueryRow(ctx, `SELECT `+subagentColumns+` FROM artifacts.subagents WHERE tenant_id = $1 AND slug = $2`, tenant, slug))
	if err != nil {
		return a, err
	}
	a.Body = s.subagentBody(tenant, slug)
	return a, nil
}

// PutSubagent creates or replaces a subagent; its document is written to
// <tenant>/subagents/<slug>.md.
func (s *Store) PutSubagent(ctx context.Context, tenant string, put events.SubagentPut) (events.Subagent, int64, error) {
	a := put.Subagent
	if a.Name == "" {
		a.Name = a.Slug
	}
	switch {
	case !skills.ValidSlug(a.Slug):
		return a, 0, fmt.Errorf("%w: slug %q: want lower-case words joined by -", ErrInvalid, a.Slug)
	case strings.TrimSpace(a.Description) == "":
		return a, 0, fmt.Errorf("%w: description is required", ErrInvalid)
	case len(a.Description) > 1024:
		return a, 0, fmt.Errorf("%w: description longer than 1024 characters", ErrInvalid)
	}
	for e := range a.ModelByEngine {
		if !events.EngineType(e).Valid() {
			return a, 0, fmt.Errorf("%w: modelByEngine: unknown engine %q", ErrInvalid, e)
		}
	}
	for e := range a.ToolsByEngine {
		if !events.EngineType(e).Valid() {
			return a, 0, fmt.Errorf("%w: toolsByEngine: unknown engine %q", ErrInvalid, e)
		}
	}
	path, err := s.Docs.SubagentFile(tenant, a.Slug)
	if err != nil {
		return a, 0, err
	}
	doc := &frontmatter.Doc{HasFrontmatter: true}
	doc.Set("name", a.Name)
	doc.Set("description", a.Description)
	if a.Model != "" {
		doc.Set("model", a.Model)
	}
	if len(a.Tools) > 0 {
		doc.Set("tools", strings.Join(a.Tools, ", "))
	}
	doc.Body = a.Body
	models, _ := json.Marshal(orMap(a.ModelByEngine))
	tools, _ := json.Marshal(orMap(a.ToolsByEngine))
	toolList := a.Tools
	if toolList == nil {
		toolList = []string{}
	}
	rev, err := s.change(ctx, tenant, s.subagentTarget("subagent.put", tenant, a.Slug), func(tx pgx.Tx) error {
		enabled := true
		_ = tx.QueryRow(ctx, `SELECT enabled FROM artifacts.subagents WHERE tenant_id = $1 AND slug = $2`, tenant, a.Slug).Scan(&enabled)
		if put.Enabled != nil {
			enabled = *put.Enabled
		}
		a.Enabled = enabled
		_, err := tx.Exec(ctx, `INSERT INTO artifacts.subagents (tenant_id, slug, name, description, model, tools,
			model_by_engine, tools_by_engine, enabled) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (tenant_id, slug) DO UPDATE SET name = excluded.name, description = excluded.description,
				model = excluded.model, tools = excluded.tools, model_by_engine = excluded.model_by_engine,
				tools_by_engine = excluded.tools_by_engine, enabled = excluded.enabled, updated_at = now()`,
			tenant, a.Slug, a.Name, a.Description, a.Model, toolList, models, tools, a.Enabled)
		if err != nil {
			return err
		}
		return s.Docs.Write(path, doc.String())
	})
	return a, rev, err
}

func orMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// DeleteSubagent removes a subagent and its document.
func (s *Store) DeleteSubagent(ctx context.Context, tenant, slug string) (int64, error) {
	path, err := s.Docs.SubagentFile(tenant, slug)
	if err != nil {
		return 0, err
	}
	return s.change(ctx, tenant, s.subagentTarget("subagent.delete", tenant, slug), func(tx pgx.Tx) error {
		if err := affected(tx.Exec(ctx, `DELETE FROM artifacts.subagents WHERE tenant_id = $1 AND slug = $2`, tenant, slug)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM artifacts.profile_items WHERE tenant_id = $1 AND artifact_type = 'subagent' AND ref = $2`, tenant, slug)
		return err
	}, func() { _ = s.Docs.Remove(path) })
}

// IndexSubagent records a subagent whose document is already in place (an
// adopted link) without writing it.
func (s *Store) IndexSubagent(ctx context.Context, tenant string, a events.Subagent) (int64, error) {
	return s.change(ctx, tenant, s.subagentTarget("subagent.adopt", tenant, a.Slug), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO artifacts.subagents (tenant_id, slug, name, description, model, enabled)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, slug) DO UPDATE SET name = excluded.name,
			description = excluded.description, model = excluded.model, updated_at = now()`,
			tenant, a.Slug, a.Name, a.Description, a.Model, a.Enabled)
		return err
	})
}
