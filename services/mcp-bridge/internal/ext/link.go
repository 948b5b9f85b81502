package ext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/mcp-bridge/internal/binding"
)

// link is one run's connection to one server: the MCP endpoint its agent
// talks to and, once a call needs it, the session with a remote server (a
// stdio server's session is in the Handler's stdioPool).
type link struct {
	h      *Handler
	run    binding.Run
	server events.ResolvedMCPServer
	http   http.Handler

	mu   sync.Mutex
	last time.Time
	// creds is the server as last resolved, at resolved: its headers, and
	// its OAuth token's expiry and state, renewed before the token expires.
	creds    events.ResolvedMCPServer
	resolved time.Time
	upstream *mcp.ClientSession
	// sessions are the agent's sessions with this link, closed with it.
	sessions map[*mcp.ServerSession]bool
}

func (l *link) track(ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions == nil {
		l.sessions = map[*mcp.ServerSession]bool{}
	}
	l.sessions[ss] = true
}

func (l *link) touch() { l.mu.Lock(); l.last = time.Now(); l.mu.Unlock() }

func (l *link) used() time.Time { l.mu.Lock(); defer l.mu.Unlock(); return l.last }

// close ends the agent's sessions and the one with the server.
func (l *link) close() {
	l.mu.Lock()
	up, sessions := l.upstream, l.sessions
	l.upstream, l.sessions = nil, nil
	l.mu.Unlock()
	for ss := range sessions {
		_ = ss.Close()
	}
	if up != nil {
		_ = up.Close()
	}
}

// session returns the session with the server for one call, and end,
// which the caller passes the call's error to and returns what it gives
// back. A remote server's session is the link's own, opened when there is
// none; a stdio server's is its tenant's process, shared by every run.
// A call that failed for want of a connection (not an error the server
// answered, nor the caller giving up) drops the session: the next call
// connects again, and starts a stdio server again.
func (l *link) session(ctx context.Context) (*mcp.ClientSession, func(error) error, error) {
	if l.server.Transport == events.MCPStdio {
		pr, err := l.h.stdio.acquire(ctx, l.run.TenantID, l.server)
		if err != nil {
			return nil, nil, err
		}
		return pr.cs, func(err error) error {
			defer l.h.stdio.release(pr)
			if lostConnection(ctx, err) {
				return l.h.stdio.fail(pr, err)
			}
			return err
		}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = time.Now()
	if err := l.renew(ctx); err != nil {
		return nil, nil, err
	}
	if l.creds.NeedsAuth != "" {
		// Said to the agent as the call's error: not a 401, which it would
		// take for its own credentials and retry or sign in to itself.
		return nil, nil, fmt.Errorf("MCP server %q needs to be signed in to again by an admin of the server "+
			"(its OAuth grant stopped working: %s); until then it cannot be called", l.server.Slug, l.creds.NeedsAuth)
	}
	if l.upstream == nil {
		cs, err := connect(ctx, l.h.opts, l.creds)
		if err != nil {
			return nil, nil, err
		}
		l.upstream = cs
	}
	cs := l.upstream
	return cs, func(err error) error {
		if lostConnection(ctx, err) {
			l.drop(cs)
		}
		return err
	}, nil
}

// renewAhead is how long before its OAuth token expires a link resolves
// its server again: inside the margin in which the artifacts service
// refreshes a token (mcpoauth.Client.FreshToken), so the resolve brings a
// new one. A token that lived less than twice that when it was resolved is
// renewed halfway through its life instead, so that a server issuing
// short tokens is not asked for a new one at every call.
const renewAhead = time.Minute

// renew resolves the link's server again when its OAuth token is about to
// expire (a run can outlive the token it started with), and reconnects
// with the new one. l.mu is held.
func (l *link) renew(ctx context.Context) error {
	if l.creds.Expires.IsZero() || time.Until(l.creds.Expires) > min(renewAhead, l.creds.Expires.Sub(l.resolved)/2) {
		return nil
	}
	s, err := l.h.resolve.Server(ctx, l.run.TenantID, l.run.ProjectID, l.server.Slug)
	if err != nil {
		return fmt.Errorf("MCP server %q: its OAuth token expires and could not be renewed: %w", l.server.Slug, err)
	}
	if s.ID != l.server.ID || s.URL != l.server.URL {
		// Replaced or moved since the run began: the run keeps to the
		// server it was given, and its next turn resolves the new one.
		return fmt.Errorf("MCP server %q was changed during the run; its OAuth token expires and is not renewed from the new one", l.server.Slug)
	}
	l.creds, l.resolved = s, time.Now()
	if l.upstream != nil {
		_ = l.upstream.Close()
		l.upstream = nil
	}
	return nil
}

// lostConnection reports whether err is a failed connection rather than
// the server's answer or the caller's cancellation.
func lostConnection(ctx context.Context, err error) bool {
	var rpc *jsonrpc.Error
	return err != nil && ctx.Err() == nil && !errors.As(err, &rpc)
}

// drop forgets cs after it failed, so the next call reconnects.
func (l *link) drop(cs *mcp.ClientSession) {
	l.mu.Lock()
	if l.upstream == cs {
		l.upstream = nil
	}
	l.mu.Unlock()
	_ = cs.Close()
}

// connect opens a session with the remote server s over Streamable HTTP,
// with its headers.
func connect(ctx context.Context, o Options, s events.ResolvedMCPServer) (*mcp.ClientSession, error) {
	if s.Transport != events.MCPHTTP {
		return nil, fmt.Errorf("MCP server %s: transport %q", s.Slug, s.Transport)
	}
	client := *o.HTTPClient
	client.Transport = withHeaders{base: transportOf(o.HTTPClient), headers: s.Headers}
	// A redirect would carry the server's headers to wherever it points.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cs, err := initialize(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &client, DisableStandaloneSSE: true, MaxRetries: 1})
	if err != nil {
		return nil, fmt.Errorf("connect to MCP server %s: %w", s.Slug, err)
	}
	return cs, nil
}

// initialize opens an MCP session over t as the bridge's client.
func initialize(ctx context.Context, t mcp.Transport) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "clopen-mcp-bridge", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Connect(ctx, t, nil)
}

// listTools relays one page of the server's tools, repaired, without the
// ones the run's engine may not see.
func (l *link) listTools(ctx context.Context, req *mcp.ListToolsRequest) (mcp.Result, error) {
	cs, end, err := l.session(ctx)
	if err != nil {
		return nil, err
	}
	params := &mcp.ListToolsParams{}
	if req.Params != nil {
		params.Cursor = req.Params.Cursor
	}
	res, err := cs.ListTools(ctx, params)
	if err := end(err); err != nil {
		return nil, err
	}
	out := &mcp.ListToolsResult{NextCursor: res.NextCursor, Tools: []*mcp.Tool{}}
	for _, t := range res.Tools {
		if l.server.Exposure.Hides(l.run.Engine, t.Name) {
			continue
		}
		tc := *t
		tc.OutputSchema = nil
		raw, _ := json.Marshal(t.InputSchema)
		fixed, err := RepairSchema(raw)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		tc.InputSchema = json.RawMessage(fixed)
		out.Tools = append(out.Tools, &tc)
	}
	return out, nil
}

// callTool relays a call the run's engine may make, its output capped.
func (l *link) callTool(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	name := req.Params.Name
	if l.server.Exposure.Hides(l.run.Engine, name) {
		return nil, fmt.Errorf("tool %s of MCP server %s is not exposed to %s", name, l.server.Slug, l.run.Engine)
	}
	cs, end, err := l.session(ctx)
	if err != nil {
		return nil, err
	}
	var args any
	if len(req.Params.Arguments) > 0 {
		args = req.Params.Arguments
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: req.Params.Meta, Name: name, Arguments: args})
	if err := end(err); err != nil {
		return nil, err
	}
	return capOutput(res, l.h.opts.MaxOutput), nil
}
