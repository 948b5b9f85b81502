package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/gateway/api"
)

// Audit is the gateway's audit log: API keys, users, members and projects.
// Every change below records its entry in its own transaction.
var Audit = audit.Log{Service: "gateway", Table: "gateway.audit_log"}

// Actor is who p is in the audit log.
func (p Principal) Actor() events.AuditActor {
	return events.AuditActor{ID: p.UserID, Name: p.UserName}
}

// change runs fn in a transaction and records, in the same transaction, the
// entries it returns: a change commits with its entries or not at all.
func (s *Store) change(ctx context.Context, fn func(tx pgx.Tx) ([]audit.Entry, error)) error {
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		entries, err := fn(tx)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := Audit.Record(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// projectState is a project as the audit log shows it before and after a
// change: what it is called, where its files come from, and its base.
type projectState struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	DefaultProfileID string            `json:"defaultProfileId,omitempty"`
	Source           api.ProjectSource `json:"source"`
	BaseSnapshot     string            `json:"baseSnapshot,omitempty"`
	BaseCommit       string            `json:"baseCommit,omitempty"`
}

// lockedProject reads project id of tenant in tx, locking its row; a
// project that does not exist is nil.
func lockedProject(ctx context.Context, tx pgx.Tx, tenant, id string) (*projectState, error) {
	var p projectState
	err := tx.QueryRow(ctx, `SELECT id::text, name, coalesce(default_profile_id, ''), source_kind, coalesce(source_url, ''),
		coalesce(source_branch, ''), coalesce(base_snapshot_id, ''), coalesce(base_commit, '')
		FROM gateway.projects WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id).
		Scan(&p.ID, &p.Name, &p.DefaultProfileID, &p.Source.Kind, &p.Source.URL, &p.Source.Branch, &p.BaseSnapshot, &p.BaseCommit)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read project: %w", err)
	}
	return &p, nil
}

// projectEntry is an entry about project p (before or after: whichever is
// not nil names it).
func projectEntry(tenant string, actor events.AuditActor, action string, before, after *projectState) audit.Entry {
	named := after
	if named == nil {
		named = before
	}
	e := audit.Entry{Tenant: tenant, Actor: actor, Action: action, Target: events.AuditTarget{Type: "project", ID: named.ID, Name: named.Name}}
	if before != nil {
		e.Before = before
	}
	if after != nil {
		e.After = after
	}
	return e
}

// AuditPage returns a page of the gateway's part of p's tenant's audit log.
func (s *Store) AuditPage(ctx context.Context, p Principal, q events.AuditQuery) ([]events.AuditEntry, error) {
	return Audit.List(ctx, s.db, p.TenantID, q)
}
