package events

import (
	"encoding/json"
	"time"
)

// OpAuditList is svc.<service>.audit.list, served by every service that
// keeps an audit log of its own (streammgr, artifacts): a page of the
// caller's tenant's entries (AuditQuery, AuditPage). The gateway merges the
// pages with its own log.
const OpAuditList = "audit.list"

// AuditOperator is the actor id of a change made with `clopen admin`, by
// whoever holds the database's credentials rather than by a user.
const AuditOperator = "operator"

// AuditRedacted stands in an audit entry for a value that is a secret: a
// credential, key, token or password is never recorded.
const AuditRedacted = "<redacted>"

// AuditEntry is one committed change of a tenant's configuration: who made
// it, when, what it did to what, and the target before and after (JSON,
// secrets replaced by AuditRedacted; null before a creation and after a
// deletion).
type AuditEntry struct {
	ID      string          `json:"id"`
	At      time.Time       `json:"at"`
	Service string          `json:"service" doc:"the service that made the change and keeps the entry: gateway, artifacts or streammgr"`
	Actor   AuditActor      `json:"actor"`
	Action  string          `json:"action" doc:"what was done, as noun.verb: apikey.create, member.remove, account.update, budget.set …"`
	Target  AuditTarget     `json:"target"`
	Before  json.RawMessage `json:"before" doc:"the target before the change; null for a creation"`
	After   json.RawMessage `json:"after" doc:"the target after the change; null for a deletion"`
}

// AuditActor is who made a change: a user of the tenant, or the operator.
type AuditActor struct {
	ID   string `json:"id" doc:"the user's id, or operator for clopen admin"`
	Name string `json:"name"`
}

// AuditTarget is what a change was made to.
type AuditTarget struct {
	Type string `json:"type" doc:"apikey, user, member, project, skill, subagent, instructions, permissions, profile, provider, account, source_credential, budget, tenant_limits …"`
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// AuditQuery asks one service for a page of the caller's tenant's audit
// entries, newest first: those at or after From and before To (each
// optional), by ActorID, of Action (exact, or every action under a prefix
// written "project.*"), about TargetType and TargetID, older than the
// cursor (Before, BeforeID: the last entry of the previous page).
type AuditQuery struct {
	Caller
	From       time.Time `json:"from,omitzero"`
	To         time.Time `json:"to,omitzero"`
	ActorID    string    `json:"actorId,omitempty"`
	Action     string    `json:"action,omitempty"`
	TargetType string    `json:"targetType,omitempty"`
	TargetID   string    `json:"targetId,omitempty"`
	Before     time.Time `json:"before,omitzero"`
	BeforeID   string    `json:"beforeId,omitempty"`
	Limit      int       `json:"limit,omitempty"`
}

// AuditPage is a page of audit entries, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
}
