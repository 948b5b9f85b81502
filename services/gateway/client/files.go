package client

import (
	"context"
	"strconv"

	"clopen.dev/services/gateway/api"
)

// Files lists a page of a session's workspace files as HEAD left them
// (limit 0: the server's default).
func (c *Client) Files(ctx context.Context, session, prefix, cursor string, limit int) (api.Files, error) {
	return get[api.Files](ctx, c, p("/v1/sessions/", session, "/files"), pageQuery("prefix", prefix, "cursor", cursor, "limit", strconv.Itoa(limit)))
}

// SessionDiff is what a session changed against the base it started from.
func (c *Client) SessionDiff(ctx context.Context, session string) (api.Diff, error) {
	return get[api.Diff](ctx, c, p("/v1/sessions/", session, "/diff"), nil)
}

// RunDiff is what one turn changed.
func (c *Client) RunDiff(ctx context.Context, run string) (api.Diff, error) {
	return get[api.Diff](ctx, c, p("/v1/runs/", run, "/diff"), nil)
}
