package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"clopen.dev/pkg/events"
)

// usageColumns maps a usage dimension to its column, as text.
var usageColumns = map[string]string{
	"project": "project_id::text",
	"user":    "coalesce(requested_by::text, '')",
	"engine":  "engine",
	"model":   "model",
}

// Usage sums the tenant's runs queued in [req.From, req.To) per group: the
// token counts and cost their engines reported, how many there were and
// failed, and how long they ran. req.GroupBy must hold only
// events.UsageGroups (the caller checks).
func Usage(ctx context.Context, db DB, tenant string, req events.UsageRequest) ([]events.UsageRow, error) {
	where := []string{"tenant_id = $1", "queued_at >= $2", "queued_at < $3"}
	args := []any{tenant, req.From, req.To}
	if req.ProjectID != "" {
		args = append(args, req.ProjectID)
		where = append(where, fmt.Sprintf("project_id = $%d", len(args)))
	}
	if req.OnlyUser != "" {
		args = append(args, req.OnlyUser)
		where = append(where, fmt.Sprintf("requested_by = $%d", len(args)))
	}
	sql := `SELECT ` + strings.Join(dimensions(req.GroupBy), ", ") + `, count(*), count(*) FILTER (WHERE state = 'failed'),
		coalesce(sum((usage->>'inputTokens')::bigint), 0), coalesce(sum((usage->>'outputTokens')::bigint), 0),
		coalesce(sum((usage->>'cacheReadInputTokens')::bigint), 0), coalesce(sum((usage->>'cacheCreationInputTokens')::bigint), 0),
		coalesce(sum(cost_usd), 0)::double precision,
		coalesce(sum(extract(epoch FROM coalesce(ended_at, now()) - claimed_at)) FILTER (WHERE claimed_at IS NOT NULL), 0)::double precision
		FROM streammgr.runs WHERE ` + strings.Join(where, " AND ") + ` GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []events.UsageRow{}
	for rows.Next() {
		var r events.UsageRow
		if err := rows.Scan(&r.ProjectID, &r.UserID, &r.Engine, &r.Model, &r.Runs, &r.FailedRuns, &r.InputTokens, &r.OutputTokens,
			&r.CacheReadInputTokens, &r.CacheCreationInputTokens, &r.CostUSD, &r.RunSeconds); err != nil {
			return nil, err
		}
		if r.Runs > 0 {
			out = append(out, r)
		}
	}
	return out, rows.Err()
}

// dimensions is the select list of the four dimensions in scan order: the
// grouped ones from their columns, the rest empty (constant, so grouping by
// them groups nothing).
func dimensions(groups []string) []string {
	var list []string
	for _, d := range events.UsageGroups {
		col := "''::text"
		if slices.Contains(groups, d) {
			col = usageColumns[d]
		}
		list = append(list, col)
	}
	return list
}
