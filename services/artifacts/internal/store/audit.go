package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
)

// Audit is the artifacts' part of the tenants' audit log. Every change of
// the store records an entry in its own transaction: the target as clients
// see it before and after (never a credential: accounts and source
// credentials show whether they hold one, and an action says when it was
// set or cleared), by the caller of the request (audit.Caller).
var Audit = audit.Log{Service: "artifacts", Table: "artifacts.audit_log"}

// target is what a change is made to: the action recorded, the target's
// kind and id, and read, which returns it as clients see it (nil when it
// does not exist) and its name, in the change's transaction.
type target struct {
	action, kind, id string
	read             func(ctx context.Context, tx pgx.Tx) (view any, name string, err error)
}

// audited runs fn in tx between two reads of t and records the change.
func audited(ctx context.Context, tx pgx.Tx, tenant string, t target, fn func(tx pgx.Tx) error) error {
	before, name, err := t.read(ctx, tx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	after, newName, err := t.read(ctx, tx)
	if err != nil {
		return err
	}
	if newName != "" {
		name = newName
	}
	return Audit.Record(ctx, tx, audit.Entry{Tenant: tenant, Actor: audit.Caller(ctx), Action: t.action,
		Target: events.AuditTarget{Type: t.kind, ID: t.id, Name: name}, Before: before, After: after})
}

// absent turns ErrNotFound into a nil view: the target does not exist.
func absent[T any](v T, name string, err error) (any, string, error) {
	if errors.Is(err, ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return v, name, nil
}

// skillState is a skill as the audit log shows it: its fields and its
// SKILL.md (audit digests a long one).
type skillState struct {
	events.Skill
	Document string `json:"document"`
}

func (s *Store) skillTarget(action, tenant, slug string) target {
	return target{action: action, kind: "skill", id: slug, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		sk, err := scanSkill(tx.QueryRow(ctx, `SELECT `+skillColumns+` FROM artifacts.skills WHERE tenant_id = $1 AND slug = $2`, tenant, slug))
		st := skillState{Skill: sk}
		if files, ferr := s.Docs.ReadSkill(tenant, slug); ferr == nil {
			st.Document = files["SKILL.md"]
		}
		return absent(st, sk.Name, err)
	}}
}

// skillsTarget is several skills changed at once (an import), by slug.
func (s *Store) skillsTarget(action, tenant string, slugs []string) target {
	return target{action: action, kind: "skill", id: "import", read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		out := map[string]any{}
		for _, slug := range slugs {
			v, _, err := s.skillTarget(action, tenant, slug).read(ctx, tx)
			if err != nil {
				return nil, "", err
			}
			out[slug] = v
		}
		return out, "", nil
	}}
}

func (s *Store) subagentTarget(action, tenant, slug string) target {
	return target{action: action, kind: "subagent", id: slug, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		a, err := scanSubagent(tx.QueryRow(ctx, `SELECT `+subagentColumns+` FROM artifacts.subagents WHERE tenant_id = $1 AND slug = $2`,
			tenant, slug))
		a.Body = s.subagentBody(tenant, slug)
		return absent(a, a.Name, err)
	}}
}

func instructionsTarget(tenant, scope, project string) target {
	return target{action: "instructions.set", kind: "instructions", id: scopeID(scope, project, ""),
		read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
			in := events.Instructions{Scope: scope, ProjectID: project}
			err := tx.QueryRow(ctx, `SELECT content, enabled, updated_at FROM artifacts.instructions
				WHERE tenant_id = $1 AND scope = $2 AND project_id = $3`, tenant, scope, project).Scan(&in.Content, &in.Enabled, &in.UpdatedAt)
			return absent(in, scope, mapErr(err))
		}}
}

func permissionsTarget(tenant string, set events.PermissionSet) target {
	return target{action: "permissions.set", kind: "permissions", id: scopeID(set.Scope, set.ProjectID, set.ProfileID),
		read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
			got := events.PermissionSet{Scope: set.Scope, ProjectID: set.ProjectID, ProfileID: set.ProfileID}
			err := tx.QueryRow(ctx, `SELECT allow, deny FROM artifacts.permission_sets
				WHERE tenant_id = $1 AND scope = $2 AND project_id = $3 AND profile_id = $4`, tenant, set.Scope, set.ProjectID, set.ProfileID).
				Scan(&got.Allow, &got.Deny)
			return absent(got, set.Scope, mapErr(err))
		}}
}

// scopeID names a layer: global, or the project or profile it belongs to.
func scopeID(scope, project, profile string) string {
	switch {
	case project != "":
		return project
	case profile != "":
		return profile
	}
	return scope
}

func profileTarget(action, tenant, id string) target {
	return target{action: action, kind: "profile", id: id, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		p, err := readProfile(ctx, tx, tenant, id)
		return absent(p, p.Name, err)
	}}
}

// projectTarget is a project's artifacts: its default profile, its layers
// and whether a source credential is stored for it.
func projectTarget(action, tenant, project string) target {
	return target{action: action, kind: "project", id: project, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		var v struct {
			DefaultProfileID string   `json:"defaultProfileId,omitempty"`
			Instructions     string   `json:"instructions,omitempty"`
			Allow            []string `json:"allow,omitempty"`
			Deny             []string `json:"deny,omitempty"`
			SourceCredential bool     `json:"hasSourceCredential"`
		}
		err := tx.QueryRow(ctx, `SELECT
			coalesce((SELECT profile_id::text FROM artifacts.project_defaults WHERE tenant_id = $1 AND project_id = $2), ''),
			coalesce((SELECT content FROM artifacts.instructions WHERE tenant_id = $1 AND scope = 'project' AND project_id = $2), ''),
			(SELECT allow FROM artifacts.permission_sets WHERE tenant_id = $1 AND scope = 'project' AND project_id = $2),
			(SELECT deny FROM artifacts.permission_sets WHERE tenant_id = $1 AND scope = 'project' AND project_id = $2),
			EXISTS (SELECT 1 FROM artifacts.source_credentials WHERE tenant_id = $1 AND project_id = $2)`, tenant, project).
			Scan(&v.DefaultProfileID, &v.Instructions, &v.Allow, &v.Deny, &v.SourceCredential)
		return v, "", err
	}}
}

func providerTarget(action, tenant, id string) target {
	return target{action: action, kind: "provider", id: id, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		p, err := scanProvider(tx.QueryRow(ctx, `SELECT `+providerColumns+` FROM artifacts.engine_providers p
			WHERE p.tenant_id = $1 AND p.id = $2`, tenant, id))
		return absent(p, p.Slug, err)
	}}
}

func accountTarget(action, tenant, id string) target {
	return target{action: action, kind: "account", id: id, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		a, err := scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+` FROM artifacts.engine_accounts WHERE tenant_id = $1 AND id = $2`,
			tenant, id))
		return absent(a, a.Name, err)
	}}
}

// sourceCredentialState is a project's stored git credential as the audit
// log shows it: whether there is one, never what it is.
type sourceCredentialState struct {
	ProjectID      string    `json:"projectId"`
	KeyFingerprint string    `json:"keyFingerprint"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

func sourceCredentialTarget(action, tenant, project string) target {
	return target{action: action, kind: "source_credential", id: project, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		st := sourceCredentialState{ProjectID: project}
		err := tx.QueryRow(ctx, `SELECT key_fingerprint, updated_at FROM artifacts.source_credentials WHERE tenant_id = $1 AND project_id = $2`,
			tenant, project).Scan(&st.KeyFingerprint, &st.UpdatedAt)
		return absent(st, "", mapErr(err))
	}}
}
