package ext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/mcp-bridge/internal/binding"
)

// Pattern is where the bridge mounts the Handler.
const Pattern = "/mcp/ext/"

// DefaultMaxOutput is the default cap on a tool call's output, in bytes.
const DefaultMaxOutput = 100_000

// ErrNotFound is what a Resolver returns for a server the run's tenant and
// project do not have (or have disabled).
var ErrNotFound = errors.New("no such MCP server")

// Resolver finds the server slug names for a run of tenant's project: the
// project's own, else the tenant's, with its secrets in clear.
type Resolver interface {
	Server(ctx context.Context, tenant, project, slug string) (events.ResolvedMCPServer, error)
}

// Launcher returns the command that runs tenant's stdio server s, confined
// as the agents are, and started, which the Handler calls once it started
// the command (or failed to). ctx bounds the process's life. The Handler
// speaks MCP over the command's stdin and stdout; a launcher that sets
// Stderr to a value with a String method (a bounded tail) has its end
// quoted in the errors of a server that failed.
type Launcher func(ctx context.Context, tenant string, s events.ResolvedMCPServer) (cmd *exec.Cmd, started func(), err error)

// Options tune a Handler; the zero value serves remote servers only.
type Options struct {
	Logger *slog.Logger
	// Launch starts stdio servers; nil refuses them.
	Launch Launcher
	// HTTPClient reaches remote servers; nil is a client that refuses to
	// connect to an address that is not public unless its host is in
	// AllowHosts.
	HTTPClient *http.Client
	AllowHosts []string
	// MaxOutput caps a tool call's output in bytes; 0 is DefaultMaxOutput.
	MaxOutput int
	// IdleTimeout closes a run's connection to a server unused that long,
	// and stops a stdio server no call has used that long; 0 is 10 minutes.
	IdleTimeout time.Duration
}

// Handler serves /mcp/ext/<slug>. It is safe for concurrent use; Close
// ends every upstream connection.
type Handler struct {
	resolve Resolver
	opts    Options
	log     *slog.Logger
	stdio   *stdioPool
	cancel  context.CancelFunc // ends the stdio servers' processes

	mu    sync.Mutex
	links map[string]*link // by tenant, run and slug
}

// New returns a Handler resolving servers with r.
func New(r Resolver, o Options) *Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = publicClient(o.AllowHosts)
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 10 * time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Handler{resolve: r, opts: o, log: o.Logger, cancel: cancel, links: map[string]*link{},
		stdio: &stdioPool{launch: o.Launch, idle: o.IdleTimeout, life: ctx, procs: map[string]*stdioProc{}}}
}

// ServeHTTP checks the request's run against the server it names, then
// serves MCP to it on that run's own session table.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	run, ok := binding.From(r.Context())
	if !ok {
		refuse(w, http.StatusUnauthorized, "no run: this request carries no verified run token")
		return
	}
	slug := strings.TrimPrefix(r.URL.Path, Pattern)
	if slug == "" || strings.Contains(slug, "/") || len(slug) > 64 {
		refuse(w, http.StatusNotFound, "want /mcp/ext/<slug>")
		return
	}
	if !slices.Contains(run.Servers, slug) {
		refuse(w, http.StatusForbidden, fmt.Sprintf("MCP server %q is not in run %s's profile", slug, run.RunID))
		return
	}
	key := run.TenantID + "/" + run.RunID + "/" + slug
	l, err := h.link(r.Context(), key, run, slug)
	switch {
	case errors.Is(err, ErrNotFound):
		refuse(w, http.StatusNotFound, fmt.Sprintf("MCP server %q: not found for this project", slug))
		return
	case err != nil:
		h.log.ErrorContext(r.Context(), "resolve mcp server", "slug", slug, "run_id", run.RunID, "err", err)
		refuse(w, http.StatusBadGateway, fmt.Sprintf("MCP server %q could not be resolved", slug))
		return
	case !l.server.Exposure.Allows(run.Engine):
		refuse(w, http.StatusForbidden, fmt.Sprintf("MCP server %q is not exposed to %s", slug, run.Engine))
		return
	}
	l.http.ServeHTTP(w, r)
}

// link returns the run's link to slug, resolving the server when it is
// new, and closes the links left idle.
func (h *Handler) link(ctx context.Context, key string, run binding.Run, slug string) (*link, error) {
	h.mu.Lock()
	now := time.Now()
	var idle []*link
	for k, l := range h.links {
		if k != key && now.Sub(l.used()) > h.opts.IdleTimeout {
			delete(h.links, k)
			idle = append(idle, l)
		}
	}
	l, ok := h.links[key]
	if ok {
		l.touch()
	}
	h.mu.Unlock()
	for _, old := range idle {
		old.close()
	}
	if ok {
		return l, nil
	}
	s, err := h.resolve.Server(ctx, run.TenantID, run.ProjectID, slug)
	if err != nil {
		return nil, err
	}
	if s.Slug != slug || (s.ProjectID != "" && s.ProjectID != run.ProjectID) {
		// A resolver must never hand a run another project's server.
		return nil, fmt.Errorf("resolver returned %s/%s for %s/%s", s.ProjectID, s.Slug, run.ProjectID, slug)
	}
	l = h.newLink(run, s)
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.links[key]; ok {
		return old, nil // another request won
	}
	h.links[key] = l
	return l, nil
}

// Close ends every run's upstream connection and stdio server.
func (h *Handler) Close() error {
	h.mu.Lock()
	links := h.links
	h.links = map[string]*link{}
	h.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	h.stdio.close()
	h.cancel()
	return nil
}

// refuse answers a request that never reaches MCP with a JSON-RPC error
// (id null), as the bridge's token check does.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32001, "message": msg}})
}

// newLink builds the MCP server a run's agent talks to for s.
func (h *Handler) newLink(run binding.Run, s events.ResolvedMCPServer) *link {
	now := time.Now()
	l := &link{h: h, run: run, server: s, creds: s, resolved: now, last: now}
	srv := mcp.NewServer(&mcp.Implementation{Name: "clopen-" + s.Slug, Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				l.track(ss)
			}
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				return l.listTools(ctx, r)
			case *mcp.CallToolRequest:
				return l.callTool(ctx, r)
			}
			return next(ctx, method, req)
		}
	})
	l.http = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: h.opts.IdleTimeout})
	return l
}
