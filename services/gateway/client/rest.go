package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// Me returns the key's user and tenant.
func (c *Client) Me(ctx context.Context) (api.Me, error) { return get[api.Me](ctx, c, "/v1/me", nil) }

// Users lists the tenant's users (admins).
func (c *Client) Users(ctx context.Context) ([]api.User, error) {
	r, err := get[api.Users](ctx, c, "/v1/users", nil)
	return r.Users, err
}

// CreateUser adds a user to the tenant (admins).
func (c *Client) CreateUser(ctx context.Context, in api.CreateUser) (api.User, error) {
	return send[api.User](ctx, c, http.MethodPost, "/v1/users", in)
}

// APIKeys lists the caller's keys, or with userID another user's (admins).
func (c *Client) APIKeys(ctx context.Context, userID string) ([]api.APIKey, error) {
	r, err := get[api.APIKeys](ctx, c, "/v1/api-keys", pageQuery("userId", userID))
	return r.APIKeys, err
}

// CreateAPIKey mints a key; its secret is in the result only.
func (c *Client) CreateAPIKey(ctx context.Context, in api.CreateAPIKey) (api.NewAPIKey, error) {
	return send[api.NewAPIKey](ctx, c, http.MethodPost, "/v1/api-keys", in)
}

// RevokeAPIKey revokes a key.
func (c *Client) RevokeAPIKey(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/api-keys/", id), nil, nil, nil)
}

// Projects lists the projects the caller may use.
func (c *Client) Projects(ctx context.Context) ([]api.Project, error) {
	r, err := get[api.Projects](ctx, c, "/v1/projects", nil)
	return r.Projects, err
}

// CreateProject creates a project owned by the caller.
func (c *Client) CreateProject(ctx context.Context, in api.CreateProject) (api.Project, error) {
	return send[api.Project](ctx, c, http.MethodPost, "/v1/projects", in)
}

// Project returns a project.
func (c *Client) Project(ctx context.Context, id string) (api.Project, error) {
	return get[api.Project](ctx, c, p("/v1/projects/", id), nil)
}

// UpdateProject changes a project.
func (c *Client) UpdateProject(ctx context.Context, id string, in api.UpdateProject) (api.Project, error) {
	return send[api.Project](ctx, c, http.MethodPatch, p("/v1/projects/", id), in)
}

// DeleteProject deletes a project and its chat sessions.
func (c *Client) DeleteProject(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/projects/", id), nil, nil, nil)
}

// UploadArchive makes the tar, tar.gz or zip read from archive the
// project's base; contentType may be empty (the gateway tells the format
// from the bytes).
func (c *Client) UploadArchive(ctx context.Context, id, contentType string, archive io.Reader) (api.Project, error) {
	var out api.Project
	path := p("/v1/projects/", id, "/archive")
	err := c.doBody(ctx, http.MethodPost, c.base+path, path, archive, contentType, &out)
	return out, err
}

// SetSource sets a project's git source and imports it as the base.
func (c *Client) SetSource(ctx context.Context, id string, in api.SourceInput) (api.Project, error) {
	return send[api.Project](ctx, c, http.MethodPut, p("/v1/projects/", id, "/source"), in)
}

// PushSession pushes a session's files to a branch of its project's
// repository.
func (c *Client) PushSession(ctx context.Context, id string, in api.PushSession) (api.PushResult, error) {
	return send[api.PushResult](ctx, c, http.MethodPost, p("/v1/sessions/", id, "/push"), in)
}

// Members lists a project's members.
func (c *Client) Members(ctx context.Context, project string) ([]api.Member, error) {
	r, err := get[api.Members](ctx, c, p("/v1/projects/", project, "/members"), nil)
	return r.Members, err
}

// AddMember adds a member to a project or changes its role.
func (c *Client) AddMember(ctx context.Context, project string, in api.AddMember) (api.Member, error) {
	return send[api.Member](ctx, c, http.MethodPost, p("/v1/projects/", project, "/members"), in)
}

// RemoveMember removes a member from a project.
func (c *Client) RemoveMember(ctx context.Context, project, user string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/projects/", project, "/members/", user), nil, nil, nil)
}

// Sessions lists a project's chat sessions, newest first; limit 0 is the
// server's default.
func (c *Client) Sessions(ctx context.Context, project string, limit int) ([]events.Session, error) {
	r, err := get[api.Sessions](ctx, c, p("/v1/projects/", project, "/sessions"), pageQuery("limit", strconv.Itoa(limit)))
	return r.Sessions, err
}

// CreateSession creates a chat session in a project.
func (c *Client) CreateSession(ctx context.Context, project string, in api.CreateSession) (events.Session, error) {
	return send[events.Session](ctx, c, http.MethodPost, p("/v1/projects/", project, "/sessions"), in)
}

// Session returns a chat session.
func (c *Client) Session(ctx context.Context, id string) (events.Session, error) {
	return get[events.Session](ctx, c, p("/v1/sessions/", id), nil)
}

// ApplySession applies the session's files to its project's base; a 409
// names the conflicting paths.
func (c *Client) ApplySession(ctx context.Context, id string) (api.AppliedSession, error) {
	return send[api.AppliedSession](ctx, c, http.MethodPost, p("/v1/sessions/", id, "/apply"), nil)
}

// UpdateSession changes a session's title or engine selection.
func (c *Client) UpdateSession(ctx context.Context, id string, in api.UpdateSession) (events.Session, error) {
	return send[events.Session](ctx, c, http.MethodPatch, p("/v1/sessions/", id), in)
}

// DeleteSession deletes a chat session.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, p("/v1/sessions/", id), nil, nil, nil)
}

// Messages returns a page of a session's saved messages.
func (c *Client) Messages(ctx context.Context, session, afterRowID string, limit int) (api.Messages, error) {
	return get[api.Messages](ctx, c, p("/v1/sessions/", session, "/messages"),
		pageQuery("afterRowId", afterRowID, "limit", strconv.Itoa(limit)))
}

// SendMessage starts a turn (or queues it behind the active one).
func (c *Client) SendMessage(ctx context.Context, session string, in api.SendMessage) (events.StartTurnReply, error) {
	return send[events.StartTurnReply](ctx, c, http.MethodPost, p("/v1/sessions/", session, "/messages"), in)
}

// Runs lists a session's runs, oldest first.
func (c *Client) Runs(ctx context.Context, session string, limit int) ([]events.Run, error) {
	r, err := get[api.Runs](ctx, c, p("/v1/sessions/", session, "/runs"), pageQuery("limit", strconv.Itoa(limit)))
	return r.Runs, err
}

// Snapshot returns a session's messages, active run and partial text, with
// the cursor live events continue from.
func (c *Client) Snapshot(ctx context.Context, session string) (events.Snapshot, error) {
	return get[events.Snapshot](ctx, c, p("/v1/sessions/", session, "/snapshot"), nil)
}

// Cancel cancels a run of the session (runID empty: the active one) and
// returns streammgr's acknowledgement.
func (c *Client) Cancel(ctx context.Context, session, runID string) (json.RawMessage, error) {
	return send[json.RawMessage](ctx, c, http.MethodPost, p("/v1/sessions/", session, "/cancel"), api.RunControl{RunID: runID})
}

// Interrupt interrupts a run of the session (runID empty: the active one).
func (c *Client) Interrupt(ctx context.Context, session, runID string) (json.RawMessage, error) {
	return send[json.RawMessage](ctx, c, http.MethodPost, p("/v1/sessions/", session, "/interrupt"), api.RunControl{RunID: runID})
}

// Answer answers a parked question or permission prompt.
func (c *Client) Answer(ctx context.Context, session string, in api.Answer) (json.RawMessage, error) {
	return send[json.RawMessage](ctx, c, http.MethodPost, p("/v1/sessions/", session, "/answer"), in)
}

// Run returns a run.
func (c *Client) Run(ctx context.Context, id string) (events.Run, error) {
	return get[events.Run](ctx, c, p("/v1/runs/", id), nil)
}

// Retry retries a lost run as a new run of its session (a second retry of
// the same run returns the first).
func (c *Client) Retry(ctx context.Context, id string) (events.StartTurnReply, error) {
	return send[events.StartTurnReply](ctx, c, http.MethodPost, p("/v1/runs/", id, "/retry"), struct{}{})
}

// RunEvents returns a page of a run's stored events after (afterEpoch,
// afterSeq).
func (c *Client) RunEvents(ctx context.Context, run string, afterEpoch, afterSeq uint64, limit int) ([]events.StoredEvent, error) {
	r, err := get[api.RunEvents](ctx, c, p("/v1/runs/", run, "/events"), pageQuery(
		"afterEpoch", strconv.FormatUint(afterEpoch, 10), "afterSeq", strconv.FormatUint(afterSeq, 10), "limit", strconv.Itoa(limit)))
	return r.Events, err
}

// Usage sums recorded runs over a time range (query: from, to, groupBy,
// projectId): the tenant's for an admin, the caller's own for a member.
func (c *Client) Usage(ctx context.Context, query url.Values) (events.UsageReply, error) {
	return get[events.UsageReply](ctx, c, "/v1/usage", query)
}

// Budget returns the tenant's budgets with this period's spend (admins).
func (c *Client) Budget(ctx context.Context) (events.BudgetsReply, error) {
	return get[events.BudgetsReply](ctx, c, "/v1/budget", nil)
}

// Audit returns a page of the tenant's audit log (admins); query holds the
// filters (from, to, actor, action, targetType, targetId), cursor and limit.
func (c *Client) Audit(ctx context.Context, query url.Values) (api.AuditPage, error) {
	return get[api.AuditPage](ctx, c, "/v1/audit", query)
}
