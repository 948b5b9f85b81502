// Package audit is the audit log every service keeps of the changes made to
// a tenant's configuration: API keys, users and members, projects and their
// sources, credentials and providers, permissions, profiles, skills,
// subagents, instructions, budgets and limits (and, as they come, MCP
// servers). Each service owns one table of the same shape in its own schema
// (its migration creates <schema>.audit_log as in testdata/audit_log.sql)
// and records an entry in the same
// transaction as the change it describes, so a change that commits has its
// entry and a change that fails leaves none. The gateway reads the other
// services' entries through their svc audit.list endpoints (Serve), never
// their tables.
//
// To audit a new kind of change in a service: describe the target as it is
// shown to clients (never with its secrets: Redact removes what it can
// recognise, and a value that is a secret is better left out), and call
// Log.Record with the transaction that makes the change.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
)

// Entry is one change to record.
type Entry struct {
	Tenant string
	Actor  events.AuditActor
	// Action is noun.verb: "apikey.create", "account.update".
	Action string
	Target events.AuditTarget
	// Before and After are the target as clients see it, before and after
	// the change (nil: it did not exist); they are encoded as JSON and
	// redacted (Redact).
	Before, After any
}

// Operator is the actor of a change made with `clopen admin`.
var Operator = events.AuditActor{ID: events.AuditOperator, Name: "operator"}

// Caller is the actor a service request acts for: the user in its verified
// caller token (svc.ClaimsFrom), or Operator when there is none (a change
// the operator's tools make in-process).
func Caller(ctx context.Context) events.AuditActor {
	if c, ok := svc.ClaimsFrom(ctx); ok && c.UserID != "" {
		return events.AuditActor{ID: c.UserID, Name: c.UserName}
	}
	return Operator
}

// Log is one service's audit table.
type Log struct {
	// Service names the service in the entries it lists ("gateway").
	Service string
	// Table is the schema-qualified table ("gateway.audit_log").
	Table string
}

var tableName = regexp.MustCompile(`^[a-z_]+\.[a-z_]+$`)

var (
	actionName   = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)+$`)
	actionPrefix = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)*\.\*$`)
)

// Record writes e in tx, the transaction that makes the change: the entry
// commits with the change or not at all.
func (l Log) Record(ctx context.Context, tx pgx.Tx, e Entry) error {
	if !tableName.MatchString(l.Table) {
		return fmt.Errorf("audit: bad table %q", l.Table)
	}
	if !actionName.MatchString(e.Action) || e.Target.Type == "" || e.Actor.ID == "" {
		return fmt.Errorf("audit: entry %q on %q by %q is incomplete", e.Action, e.Target.Type, e.Actor.ID)
	}
	before, err := Redact(e.Before)
	if err != nil {
		return fmt.Errorf("audit %s: before: %w", e.Action, err)
	}
	after, err := Redact(e.After)
	if err != nil {
		return fmt.Errorf("audit %s: after: %w", e.Action, err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+l.Table+` (id, tenant_id, actor_id, actor_name, action, target_type, target_id, target_name, before, after)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, uuid.NewString(), e.Tenant, e.Actor.ID, e.Actor.Name, e.Action,
		e.Target.Type, e.Target.ID, e.Target.Name, nullJSON(before), nullJSON(after))
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

// nullJSON is a JSON document for a jsonb parameter, nil for null (which
// the column stores as SQL NULL).
func nullJSON(b json.RawMessage) any {
	if b == nil || string(b) == "null" {
		return nil
	}
	return string(b)
}

// MaxPage is the most entries one page holds; DefaultPage is a page's
// size when the query does not say.
const (
	MaxPage     = 500
	DefaultPage = 100
)

// Check validates a query, naming the field at fault.
func Check(q events.AuditQuery) error {
	switch {
	case q.Limit < 0 || q.Limit > MaxPage:
		return svc.Invalid("limit: %d is out of range; want 1 to %d", q.Limit, MaxPage)
	case !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To):
		return svc.Invalid("from: must be before to")
	case q.Action != "" && !actionName.MatchString(q.Action) && !actionPrefix.MatchString(q.Action):
		return svc.Invalid("action %q: want noun.verb, or a prefix such as project.*", q.Action)
	case q.BeforeID != "" && uuid.Validate(q.BeforeID) != nil:
		return svc.Invalid("cursor: not one this API gave out")
	case len(q.ActorID) > 64 || len(q.TargetType) > 64 || len(q.TargetID) > 256:
		return svc.Invalid("actor, targetType, targetId: too long")
	}
	return nil
}

// List returns a page of tenant's entries matching q, newest first.
func (l Log) List(ctx context.Context, db Querier, tenant string, q events.AuditQuery) ([]events.AuditEntry, error) {
	if err := Check(q); err != nil {
		return nil, err
	}
	if !tableName.MatchString(l.Table) {
		return nil, fmt.Errorf("audit: bad table %q", l.Table)
	}
	where, args := []string{"tenant_id = $1"}, []any{tenant}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if !q.From.IsZero() {
		add("at >= $%d", q.From)
	}
	if !q.To.IsZero() {
		add("at < $%d", q.To)
	}
	if q.ActorID != "" {
		add("actor_id = $%d", q.ActorID)
	}
	if prefix, ok := strings.CutSuffix(q.Action, ".*"); ok {
		add("starts_with(action, $%d)", prefix+".")
	} else if q.Action != "" {
		add("action = $%d", q.Action)
	}
	if q.TargetType != "" {
		add("target_type = $%d", q.TargetType)
	}
	if q.TargetID != "" {
		add("target_id = $%d", q.TargetID)
	}
	switch {
	case !q.Before.IsZero() && q.BeforeID != "":
		args = append(args, q.Before, q.BeforeID)
		where = append(where, fmt.Sprintf("(at, id) < ($%d, $%d::uuid)", len(args)-1, len(args)))
	case !q.Before.IsZero():
		add("at < $%d", q.Before)
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultPage
	}
	rows, err := db.Query(ctx, `SELECT id::text, at, actor_id, actor_name, action, target_type, target_id, target_name,
		coalesce(before, 'null'::jsonb), coalesce(after, 'null'::jsonb) FROM `+l.Table+` WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(" ORDER BY at DESC, id DESC LIMIT %d", limit), args...)
	if err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.AuditEntry, error) {
		e := events.AuditEntry{Service: l.Service}
		var before, after []byte
		err := r.Scan(&e.ID, &e.At, &e.Actor.ID, &e.Actor.Name, &e.Action, &e.Target.Type, &e.Target.ID, &e.Target.Name, &before, &after)
		e.At, e.Before, e.After = e.At.UTC(), before, after
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	return out, nil
}

// Querier runs a query: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Serve is the svc audit.list handler of a service keeping l in db: the
// caller's tenant's page (the token's tenant and role; svc.Handler put them
// in the query), for its admins only.
func (l Log) Serve(db Querier) func(ctx context.Context, q events.AuditQuery) (events.AuditPage, error) {
	return func(ctx context.Context, q events.AuditQuery) (events.AuditPage, error) {
		if uuid.Validate(q.TenantID) != nil {
			return events.AuditPage{}, svc.Invalid("tenantId: want a UUID")
		}
		if q.Role != "admin" {
			return events.AuditPage{}, svc.Errorf(http.StatusForbidden, "forbidden", "only tenant admins may read the audit log")
		}
		entries, err := l.List(ctx, db, q.TenantID, q)
		var apiErr *events.APIError
		if errors.As(err, &apiErr) {
			return events.AuditPage{}, apiErr
		}
		return events.AuditPage{Entries: entries}, err
	}
}
