package client

import (
	"context"
	"encoding/json"
	"net/url"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// Engines lists every engine with its readiness.
func (c *Client) Engines(ctx context.Context) ([]api.EngineReadiness, error) {
	out, err := get[api.Engines](ctx, c, "/v1/engines", nil)
	return out.Engines, err
}

// Models lists an engine's models as the key's tenant and account see them;
// account empty is the active account.
func (c *Client) Models(ctx context.Context, engine events.EngineType, account string) (events.ModelsReply, error) {
	q := url.Values{"engine": {string(engine)}}
	if account != "" {
		q.Set("account", account)
	}
	return get[events.ModelsReply](ctx, c, "/v1/models", q)
}

// GenerateCommitMessage writes a commit message for a project's changes.
func (c *Client) GenerateCommitMessage(ctx context.Context, project string, in api.Generate) (api.CommitMessage, error) {
	return send[api.CommitMessage](ctx, c, "POST", p("/v1/projects/", project, "/generate/commit-message"), in)
}

// GenerateBranchName names a branch for a project's changes.
func (c *Client) GenerateBranchName(ctx context.Context, project string, in api.Generate) (api.BranchName, error) {
	return send[api.BranchName](ctx, c, "POST", p("/v1/projects/", project, "/generate/branch-name"), in)
}

// GenerateDraft drafts a skill, subagent or instruction from its purpose.
func (c *Client) GenerateDraft(ctx context.Context, kind string, in api.GenerateDraft) (api.Draft, error) {
	return send[api.Draft](ctx, c, "POST", p("/v1/artifacts/", kind, "/generate"), in)
}

// Models lists an engine's models over the socket (models.list).
func (cn *Conn) Models(ctx context.Context, engine events.EngineType, account string) (events.ModelsReply, error) {
	var out events.ModelsReply
	data, err := cn.Call(ctx, events.ClientFrame{Op: events.WSOpModelsList, Engine: engine, AccountID: account})
	if err != nil {
		return out, err
	}
	return out, json.Unmarshal(data, &out)
}
