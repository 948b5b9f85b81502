// Package api holds the gateway's REST wire types: the request and response
// bodies of every /v1 route. The server decodes and encodes exactly these
// types, the OpenAPI document is generated from them, and the Go client
// (package client) speaks them, so the three cannot disagree. Chat sessions,
// messages and runs travel as the pkg/events types streammgr defines, and
// skills, subagents, layers, profiles and accounts as those artifacts
// defines.
package api

import (
	"time"

	"clopen.dev/pkg/events"
)

// Roles of a user in its tenant.
const (
	RoleAdmin  = "admin"  // sees and manages every project, user and key of the tenant
	RoleMember = "member" // sees the projects it is a member of and its own keys
)

// Roles of a user in a project.
const (
	ProjectOwner  = "owner"  // may rename or delete the project and manage its members
	ProjectMember = "member" // may use the project's chat sessions
)

// Tenant is an isolated organisation: nothing of one tenant is visible to
// another.
type Tenant struct {
	ID        string    `json:"id"`
	Slug      string    `json:"slug"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// User is a person (or a robot) of a tenant.
type User struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"` // admin | member
	CreatedAt time.Time `json:"createdAt"`
}

// Me is who the request's API key belongs to.
type Me struct {
	User   User   `json:"user"`
	Tenant Tenant `json:"tenant"`
}

// Users lists a tenant's users.
type Users struct {
	Users []User `json:"users"`
}

// CreateUser adds a user to the caller's tenant (admins only).
type CreateUser struct {
	Email string `json:"email"`
	Name  string `json:"name"`
	Role  string `json:"role,omitempty"` // admin | member (default)
}

// APIKey describes an API key; the secret is never part of it.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"` // the first 12 characters of the key, to recognise it
	UserID     string     `json:"userId"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
}

// APIKeys lists API keys.
type APIKeys struct {
	APIKeys []APIKey `json:"apiKeys"`
}

// CreateAPIKey mints a key. UserID names another user of the tenant (admins
// only); empty means the caller.
type CreateAPIKey struct {
	Name      string     `json:"name"`
	UserID    string     `json:"userId,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// NewAPIKey is a freshly minted key. Key is the secret, shown this once and
// never stored.
type NewAPIKey struct {
	APIKey
	Key string `json:"key"`
}

// Project groups chat sessions and the people who may use them.
// DefaultProfileID mirrors the project's default profile, which artifacts
// holds and runs use (GET /v1/projects/{id}/default-profile reads it there).
type Project struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	DefaultProfileID string    `json:"defaultProfileId,omitempty"`
	CreatedBy        string    `json:"createdBy,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
	// Role is the caller's role in the project; empty for an admin who is
	// not a member.
	Role string `json:"role,omitempty"`
	// Source is where the project's files come from; BaseSnapshot names
	// the snapshot of its base (what a new session starts from), absent
	// while the project is empty.
	Source       ProjectSource `json:"source"`
	BaseSnapshot string        `json:"baseSnapshot,omitempty" doc:"The snapshot of the project's base files: what a new session starts from and what a session is applied back to; absent while the project is empty."`
	BaseCommit   string        `json:"baseCommit,omitempty" doc:"The git commit the base was made from, for a git project."`
}

// SourceKind says where a project's files come from.
type SourceKind string

// Project source kinds.
const (
	SourceEmpty   SourceKind = "empty"   // no files until an agent writes some
	SourceGit     SourceKind = "git"     // cloned from a repository
	SourceArchive SourceKind = "archive" // an uploaded tar, tar.gz or zip
)

// SourceKinds lists the kinds, for validation and the API schema.
func SourceKinds() []SourceKind { return []SourceKind{SourceEmpty, SourceGit, SourceArchive} }

// ProjectSource is where a project's files come from.
type ProjectSource struct {
	Kind   SourceKind `json:"kind" doc:"empty: no files; git: cloned from url at branch; archive: an uploaded tar, tar.gz or zip"`
	URL    string     `json:"url,omitempty" doc:"The git repository (git only)."`
	Branch string     `json:"branch,omitempty" doc:"The branch cloned (git only); empty: the remote's default."`
}

// Projects lists the projects the caller may see.
type Projects struct {
	Projects []Project `json:"projects"`
}

// CreateProject creates a project; its creator becomes its owner.
type CreateProject struct {
	Name string `json:"name"`
	// Source, when set, clones a git repository as the project's base.
	Source *SourceInput `json:"source,omitempty"`
}

// SourceInput sets a project's git source: the repository is cloned on an
// engine worker and becomes the project's base.
type SourceInput struct {
	Kind   SourceKind `json:"kind" doc:"git (an archive is uploaded with POST /v1/projects/{id}/archive)"`
	URL    string     `json:"url" doc:"An https URL without credentials."`
	Branch string     `json:"branch,omitempty" doc:"The branch to clone; empty: the remote's default."`
	// Credential is write-only: it is sealed in the artifacts service and
	// never returned.
	Credential *string `json:"credential,omitempty" doc:"For a private repository over https: a token, or user:password. Absent keeps the stored one; empty removes it."`
}

// PushSession pushes a session's files to a branch of its project's
// repository.
type PushSession struct {
	Branch  string `json:"branch,omitempty" doc:"The branch to push to; default clopen/<session id>."`
	Message string `json:"message,omitempty" doc:"The commit message; default a summary naming the session."`
}

// PushResult is what a push committed and the remote's answer.
type PushResult struct {
	Commit string `json:"commit"`
	Branch string `json:"branch"`
	Remote string `json:"remote,omitempty" doc:"git's porcelain status lines and the remote's messages."`
}

// UpdateProject changes a project; nil leaves a field alone.
type UpdateProject struct {
	Name             *string `json:"name,omitempty"`
	DefaultProfileID *string `json:"defaultProfileId,omitempty"` // "" clears it; set in artifacts first
}

// Member is a user's membership of a project.
type Member struct {
	UserID   string    `json:"userId"`
	Email    string    `json:"email"`
	Name     string    `json:"name"`
	Role     string    `json:"role"` // owner | member
	JoinedAt time.Time `json:"joinedAt"`
}

// Members lists a project's members.
type Members struct {
	Members []Member `json:"members"`
}

// AddMember adds a user of the tenant to a project, or changes its role.
type AddMember struct {
	UserID string `json:"userId"`
	Role   string `json:"role,omitempty"` // owner | member (default)
}

// Error is the body of every error response.
type Error struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a stable code (invalid_request,
// unauthorized, forbidden, not_found, conflict, too_large, rate_limited,
// budget_exhausted, unavailable, timeout, internal) and a message for people. A send that
// timed out names its clientRequestId: the turn, if it started, carries it
// (GET /v1/sessions/{id}/runs), and sending again with it returns that turn.
type ErrorDetail struct {
	Code            string `json:"code"`
	Message         string `json:"message"`
	ClientRequestID string `json:"clientRequestId,omitempty"`
	// Budget is, on a 402 budget_exhausted, the spent budget: its limit,
	// what was spent in its period and when the period resets.
	Budget *events.BudgetState `json:"budget,omitempty"`
}

// SignIn starts a web session with an API key: the gateway mints a
// short-lived key for the same user and keeps it in the session cookie.
type SignIn struct {
	APIKey string `json:"apiKey" doc:"An API key of the user (clp_...). It is not stored in the browser: the session gets a key of its own."`
}

// WebSession says whether the browser's session cookie is signed in, and
// how it may sign in to this gateway.
type WebSession struct {
	SignedIn  bool `json:"signedIn" doc:"True when the request carries a session cookie that is still valid."`
	DevSignIn bool `json:"devSignIn" doc:"True when the gateway runs under clopen dev and the request comes from this machine: POST /v1/session/dev signs in as the development user without a key."`
}
