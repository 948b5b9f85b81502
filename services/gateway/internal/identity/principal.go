// Package identity owns the gateway schema: tenants, users, API keys,
// projects and memberships, in Postgres through pgx. Every query of a
// tenant's data filters by tenant_id; the only exception is the lookup of an
// API key by its hash, which is how a request learns its tenant. Failures
// are classified with the apierr sentinels: a row of another tenant is
// ErrNotFound, exactly like a row that does not exist.
package identity

import (
	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// Principal is who a request acts for, resolved from its API key.
type Principal struct {
	TenantID string
	UserID   string
	UserName string
	Email    string
	Role     string // api.RoleAdmin | api.RoleMember
	KeyID    string
}

// IsAdmin reports whether the principal administers its tenant.
func (p Principal) IsAdmin() bool { return p.Role == api.RoleAdmin }

// Caller is the identity services receive: always the key's tenant, never
// one taken from a request.
func (p Principal) Caller() events.Caller {
	return events.Caller{TenantID: p.TenantID, UserID: p.UserID, UserName: p.UserName, Role: p.Role}
}
