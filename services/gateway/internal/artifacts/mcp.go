package artifacts

import (
	"context"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/identity"
)

// The external MCP servers live in two layers: the tenant's (any user
// reads them, admins change them) and a project's (users of the project
// read them, its owners and admins change them). Their env and headers are
// write-only; what is read names them.

// MCPServers lists the servers of layer l.
func (a *Artifacts) MCPServers(ctx context.Context, p identity.Principal, l Layer) ([]events.MCPServerDef, error) {
	if err := a.canRead(ctx, p, l); err != nil {
		return nil, err
	}
	var out []events.MCPServerDef
	err := a.call(ctx, events.OpMCPServersList, events.MCPServersList{Caller: p.Caller(), ProjectID: l.ProjectID}, &out)
	return out, err
}

// MCPServer returns one server of layer l.
func (a *Artifacts) MCPServer(ctx context.Context, p identity.Principal, l Layer, slug string) (events.MCPServerDef, error) {
	var out events.MCPServerDef
	if err := a.canRead(ctx, p, l); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpMCPServersGet, events.MCPServerRef{Caller: p.Caller(), ProjectID: l.ProjectID, Slug: slug}, &out)
	return out, named(err, "MCP server", slug)
}

// CreateMCPServer adds a server to layer l; its slug must be free there.
func (a *Artifacts) CreateMCPServer(ctx context.Context, p identity.Principal, l Layer, in api.MCPServerInput) (events.MCPServerDef, error) {
	if err := a.canWrite(ctx, p, l, "MCP servers"); err != nil {
		return events.MCPServerDef{}, err
	}
	if in.Slug != "" {
		_, err := a.MCPServer(ctx, p, l, in.Slug)
		if err := mustCreate(err, "MCP server", in.Slug); err != nil {
			return events.MCPServerDef{}, err
		}
	}
	env, headers := in.Env, in.Headers
	if env == nil {
		env = map[string]string{}
	}
	if headers == nil {
		headers = map[string]string{}
	}
	return a.putMCPServer(ctx, p, l, in, env, headers)
}

// ReplaceMCPServer replaces a server of layer l; env and headers left out
// are kept.
func (a *Artifacts) ReplaceMCPServer(ctx context.Context, p identity.Principal, l Layer, slug string, in api.MCPServerInput) (events.MCPServerDef, error) {
	if err := a.canWrite(ctx, p, l, "MCP servers"); err != nil {
		return events.MCPServerDef{}, err
	}
	if err := sameSlug(in.Slug, slug); err != nil {
		return events.MCPServerDef{}, err
	}
	if _, err := a.MCPServer(ctx, p, l, slug); err != nil {
		return events.MCPServerDef{}, err
	}
	in.Slug = slug
	return a.putMCPServer(ctx, p, l, in, in.Env, in.Headers)
}

func (a *Artifacts) putMCPServer(ctx context.Context, p identity.Principal, l Layer, in api.MCPServerInput, env, headers map[string]string) (events.MCPServerDef, error) {
	var out events.MCPServerDef
	err := a.call(ctx, events.OpMCPServersPut, events.MCPServerPut{Caller: p.Caller(), Server: events.MCPServerDef{
		ProjectID: l.ProjectID, Slug: in.Slug, Name: in.Name, Transport: in.Transport, URL: in.URL, Command: in.Command,
		Args: in.Args, Exposure: in.Exposure, Disabled: in.Disabled}, Env: env, Headers: headers}, &out)
	return out, err
}

// DeleteMCPServer removes a server of layer l.
func (a *Artifacts) DeleteMCPServer(ctx context.Context, p identity.Principal, l Layer, slug string) error {
	if err := a.canWrite(ctx, p, l, "MCP servers"); err != nil {
		return err
	}
	err := a.call(ctx, events.OpMCPServersDelete, events.MCPServerRef{Caller: p.Caller(), ProjectID: l.ProjectID, Slug: slug}, nil)
	return named(err, "MCP server", slug)
}

// ProbeMCPServer asks the MCP bridge to check a server of layer l as a run
// would reach it. Probing sends the server its secrets, so it takes the
// right to change the server.
func (a *Artifacts) ProbeMCPServer(ctx context.Context, p identity.Principal, l Layer, slug string) (events.MCPServerStatus, error) {
	var out events.MCPServerStatus
	if err := a.canWrite(ctx, p, l, "MCP servers"); err != nil {
		return out, err
	}
	if _, err := a.MCPServer(ctx, p, l, slug); err != nil {
		return out, err // a server that is not there is not found, bridge or no bridge
	}
	subject, err := events.ServiceSubject(events.MCPBridgeService, events.OpMCPServersProbe)
	if err != nil {
		return out, err
	}
	// A stdio server's probe starts it in the sandbox first (node alone
	// takes seconds), so it gets longer than the bus's default.
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	err = a.bus.Call(ctx, subject, events.MCPServerRef{Caller: p.Caller(), ProjectID: l.ProjectID, Slug: slug}, &out)
	return out, named(err, "MCP server", slug)
}

// ProbeTimeout bounds a probe of an MCP server, start and tools/list.
const ProbeTimeout = 30 * time.Second

// StartMCPOAuth starts signing in to a remote server of layer l; it takes
// the right to change the server, whose grant it replaces. It returns the
// URL to open in the user's browser.
func (a *Artifacts) StartMCPOAuth(ctx context.Context, p identity.Principal, l Layer, slug string, in api.MCPOAuthStart) (events.MCPOAuthStarted, error) {
	var out events.MCPOAuthStarted
	if err := a.canWrite(ctx, p, l, "MCP servers"); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpMCPOAuthStart, events.MCPOAuthStart{
		MCPServerRef: events.MCPServerRef{Caller: p.Caller(), ProjectID: l.ProjectID, Slug: slug},
		ClientID:     in.ClientID, ClientSecret: in.ClientSecret}, &out)
	return out, named(err, "MCP server", slug)
}

// CompleteMCPOAuth completes a sign-in from the callback's query. The
// callback has no principal: tenant is the one its state names (read, not
// trusted), and the artifacts service verifies the state was signed for
// that tenant and consumes its pending sign-in before it stores anything.
// It returns the server signed in to.
func (a *Artifacts) CompleteMCPOAuth(ctx context.Context, tenant string, query map[string][]string) (events.MCPServerDef, error) {
	var out events.MCPServerDef
	err := a.call(ctx, events.OpMCPOAuthComplete, events.MCPOAuthComplete{Caller: events.Caller{TenantID: tenant}, Query: query}, &out)
	return out, err
}
