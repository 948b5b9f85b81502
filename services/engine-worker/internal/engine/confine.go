package engine

import (
	"fmt"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/services/engine-worker/internal/mcpproxy"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// Sandboxing is how an adapter confines its processes; a nil *Sandboxing
// runs them unconfined (the operator's explicit opt-out).
type Sandboxing struct {
	Sandbox sandbox.Sandbox
	// UIDs is the range tenant uids come from; zero means
	// sandbox.DefaultUIDRange.
	UIDs sandbox.UIDRange
	// Limits bound each process; zero fields take sandbox.DefaultLimits.
	Limits sandbox.Limits
	// Endpoints returns the network destinations a process pointed at
	// baseURL (the model API) may reach; nil allows none.
	Endpoints func(baseURL string) ([]sandbox.Endpoint, error)
	// Egress, when set, is every process's way to the destinations the
	// operator allows (the forward proxy of CLOPEN_SANDBOX_ALLOW), and Env
	// the variables that point agents at it.
	Egress *sandbox.Endpoint
	Env    []string
	// Proxies hold the credentials of confined processes (see Route); a
	// process pointed at one of their URLs reaches that proxy.
	Proxies *modelproxy.Pool
	// MCP, when set, is every process's way to the MCP bridge (see
	// mcpproxy).
	MCP *mcpproxy.Proxy
}

// Confinement is one process's sandbox: ChildSpec.Confine.
type Confinement struct {
	Sandbox sandbox.Sandbox
	Spec    sandbox.Spec
}

// For returns the confinement of a process of tenant that runs bin in
// workspace with its state under state and talks to baseURL. The uid is the
// tenant's, so files and processes of one tenant are never another's.
func (s *Sandboxing) For(tenant, bin, workspace, baseURL string, state ...string) (*Confinement, error) {
	if s == nil {
		return nil, nil
	}
	uids := s.UIDs
	if uids.Size == 0 {
		uids = sandbox.DefaultUIDRange
	}
	uid := uids.UID(tenant)
	spec := sandbox.Spec{UID: uid, GID: uid, Workspace: workspace, State: state,
		ReadOnly: []string{InstallRoot(bin)}, Limits: s.Limits}
	if r, ok := s.proxied(baseURL); ok {
		spec.Endpoints = []sandbox.Endpoint{{Port: r.Port, Socket: r.Socket}}
	} else if s.Endpoints != nil && baseURL != "" {
		eps, err := s.Endpoints(baseURL)
		if err != nil {
			return nil, fmt.Errorf("sandbox endpoints: %w", err)
		}
		spec.Endpoints = eps
	}
	if s.Egress != nil {
		for _, e := range spec.Endpoints {
			if e.Port == s.Egress.Port {
				return nil, fmt.Errorf("sandbox endpoints: the model API's port %d is the egress proxy's", e.Port)
			}
		}
		spec.Endpoints = append(spec.Endpoints, *s.Egress)
		spec.Env = s.Env
	}
	if e := s.MCP.Endpoint(); e != nil {
		for _, have := range spec.Endpoints {
			if have.Port == e.Port {
				return nil, fmt.Errorf("sandbox endpoints: the model API's port %d is the MCP proxy's", e.Port)
			}
		}
		spec.Endpoints = append(spec.Endpoints, *e)
	}
	// Files the worker just wrote into the state dirs (settings, artifacts)
	// must be the tenant's before any process of it reads them, a warm one
	// already running included.
	if err := sandbox.Own(spec); err != nil {
		return nil, err
	}
	return &Confinement{Sandbox: s.Sandbox, Spec: spec}, nil
}

// MCPProxy returns the MCP proxy of the confined processes, nil when
// unconfined.
func (s *Sandboxing) MCPProxy() *mcpproxy.Proxy {
	if s == nil {
		return nil
	}
	return s.MCP
}

// ModelProxies returns the model proxies, nil when unconfined or without.
func (s *Sandboxing) ModelProxies() *modelproxy.Pool {
	if s == nil {
		return nil
	}
	return s.Proxies
}

func (s *Sandboxing) proxied(baseURL string) (*modelproxy.Route, bool) {
	if s.Proxies == nil {
		return nil, false
	}
	return s.Proxies.Lookup(baseURL)
}

// InstallRoot is the directory of an engine's installed files: the one
// holding node_modules for an npm install, else the binary's own.
func InstallRoot(bin string) string {
	if i := strings.Index(bin, string(filepath.Separator)+"node_modules"+string(filepath.Separator)); i > 0 {
		return bin[:i]
	}
	return filepath.Dir(bin)
}

// Fingerprint is what the sandbox adds to a warm process's start spec:
// a process confined for one tenant, workspace or state never serves
// another.
func (c *Confinement) Fingerprint() string {
	if c == nil {
		return "unconfined"
	}
	return fmt.Sprintf("uid=%d ws=%s state=%v eps=%v", c.Spec.UID, c.Spec.Workspace, c.Spec.State, c.Spec.Endpoints)
}
