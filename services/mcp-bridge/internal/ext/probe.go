package ext

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
)

// State is what a probe found a server to be.
type State string

// The states a probe reports.
const (
	StateOK          State = "ok"           // initialize and tools/list answered
	StateNeedsAuth   State = "needs_auth"   // 401 or 403, or a WWW-Authenticate challenge
	StateNeedsConfig State = "needs_config" // an env variable or header has no value
	StateUnreachable State = "unreachable"  // no connection could be made
	StateError       State = "error"        // anything else; Reason says what
)

// Status is a probe's result.
type Status struct {
	State  State  `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Tools is how many tools the server listed (StateOK only).
	Tools int `json:"tools,omitempty"`
}

// Probe initializes a session with s as a run would and lists its tools:
// the status endpoint's check. A stdio server is started for tenant, on
// its own, and stopped after.
func Probe(ctx context.Context, o Options, tenant string, s events.ResolvedMCPServer) Status {
	if s.NeedsAuth != "" {
		return Status{State: StateNeedsAuth, Reason: "the OAuth grant no longer works: " + s.NeedsAuth}
	}
	for name, v := range s.Env {
		if v == "" {
			return Status{State: StateNeedsConfig, Reason: "env " + name + " has no value"}
		}
	}
	for name, v := range s.Headers {
		if v == "" {
			return Status{State: StateNeedsConfig, Reason: "header " + name + " has no value"}
		}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = publicClient(o.AllowHosts)
	}
	seen := &lastResponse{base: transportOf(o.HTTPClient)}
	c := *o.HTTPClient
	c.Transport = seen
	o.HTTPClient = &c
	cs, closeSession, err := probeSession(ctx, o, tenant, s)
	if err == nil {
		defer closeSession()
		list, lerr := cs.ListTools(ctx, nil)
		if lerr == nil {
			return Status{State: StateOK, Tools: len(list.Tools)}
		}
		err = lerr
	}
	if code, challenged := seen.get(); code == http.StatusUnauthorized || code == http.StatusForbidden || challenged {
		return Status{State: StateNeedsAuth, Reason: http.StatusText(code) + ": the server asks for credentials"}
	}
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) {
		return Status{State: StateUnreachable, Reason: err.Error()}
	}
	return Status{State: StateError, Reason: err.Error()}
}

// probeSession opens a session with s of its own, and how to close it.
func probeSession(ctx context.Context, o Options, tenant string, s events.ResolvedMCPServer) (*mcp.ClientSession, func(), error) {
	if s.Transport != events.MCPStdio {
		cs, err := connect(ctx, o, s)
		if err != nil {
			return nil, nil, err
		}
		return cs, func() { _ = cs.Close() }, nil
	}
	life, cancel := context.WithCancel(ctx)
	p := &stdioPool{launch: o.Launch, idle: time.Minute, life: life, procs: map[string]*stdioProc{}}
	pr, err := p.acquire(ctx, tenant, s)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return pr.cs, func() { p.close(); cancel() }, nil
}

// lastResponse remembers the status of the last response and whether any
// response challenged for authentication.
type lastResponse struct {
	base       http.RoundTripper
	mu         sync.Mutex
	code       int
	challenged bool
}

func (l *lastResponse) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(r)
	if err == nil {
		l.mu.Lock()
		l.code = resp.StatusCode
		l.challenged = l.challenged || resp.Header.Get("WWW-Authenticate") != ""
		l.mu.Unlock()
	}
	return resp, err
}

func (l *lastResponse) get() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.code, l.challenged
}

// ProbeHandler serves svc.mcpbridge.mcp.servers.probe for the gateway's
// status route: the server of ref's scope (the tenant's when ProjectID is
// empty, else the project's own), resolved with the caller's token, which
// the request's context carries and the resolver forwards, then probed.
// The bridge binds it for caller tokens only:
//
//	svc.Handler(onInternal, ext.ProbeHandler(ext.Bus{NC: nc}, opts))
func ProbeHandler(r Resolver, o Options) func(ctx context.Context, ref events.MCPServerRef) (events.MCPServerStatus, error) {
	return func(ctx context.Context, ref events.MCPServerRef) (events.MCPServerStatus, error) {
		s, err := r.Server(ctx, ref.TenantID, ref.ProjectID, ref.Slug)
		if errors.Is(err, ErrNotFound) || (err == nil && s.ProjectID != ref.ProjectID) {
			// A project's probe names the project's own server, never the
			// tenant's it would fall back to.
			return events.MCPServerStatus{}, svc.NotFound("MCP server %q not found (or disabled)", ref.Slug)
		}
		if err != nil {
			return events.MCPServerStatus{}, err
		}
		st := Probe(ctx, o, ref.TenantID, s)
		return events.MCPServerStatus{State: string(st.State), Reason: st.Reason, Tools: st.Tools}, nil
	}
}
