// Package binding carries the run an MCP request was authenticated for.
//
// The bridge's token check (one run's signed token, no fallback of any
// kind) puts the Run into the request's context; every tool, internal or
// proxied, takes its tenant, project and session from there and from
// nowhere else.
package binding

import "context"

// Run is what a verified token binds an MCP request to.
type Run struct {
	TenantID  string
	ProjectID string
	SessionID string
	RunID     string
	Engine    string
	// Servers are the slugs of the external MCP servers the run's profile
	// allows; a call to any other server is refused.
	Servers []string
}

type key struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r Run) context.Context { return context.WithValue(ctx, key{}, r) }

// From returns the run ctx carries; ok is false when none does, and the
// caller must then refuse the request.
func From(ctx context.Context) (r Run, ok bool) {
	r, ok = ctx.Value(key{}).(Run)
	return r, ok
}
