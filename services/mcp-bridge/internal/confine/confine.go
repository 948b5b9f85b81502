// Package confine starts tenants' stdio MCP servers in the sandbox the
// agents run in (clopen.dev/pkg/platform/sandbox).
//
// A stdio server is a program a tenant chose, run with arguments and env
// the tenant chose: the bridge treats it as the tenant's hostile code, as
// the worker treats an agent. Each (tenant, server) gets:
//   - the tenant's unprivileged uid (sandbox.UIDRange), no capabilities,
//     no_new_privs, the seccomp filter and the agents' resource limits;
//   - its own empty HOME and working dir, <Dir>/<tenant>/<project or
//     "_tenant">/<slug>/{home,work}, read-write, and nothing else of the
//     host's that is writable;
//   - the system (/usr, /bin, the /etc files programs need) and the dirs
//     in ReadOnly (where the operator installed servers) read-only, so its
//     command is looked up on PATH in that view: node from the host's
//     /usr is there, the bridge's state dir and other tenants' dirs are not;
//   - its own pid namespace and a network namespace with loopback only:
//     no NATS, no Postgres, no other host; when the operator allows
//     destinations (ServeEgress), one loopback port reaches the egress
//     proxy, which goes to those alone, at public addresses, and
//     HTTPS_PROXY and HTTP_PROXY name it;
//   - an environment of PATH, HOME, LANG and the server's own env (its
//     sealed values, unsealed for the process) only: nothing of the
//     bridge's. The server's env reaches the server alone
//     (sandbox.Spec.CommandEnv): never bwrap, which runs as root on the
//     host and would load an LD_PRELOAD a tenant set.
//
// The sandbox is checked the first time a stdio server is launched, not
// when the bridge starts, so a bridge without bubblewrap serves every
// tenant that has no stdio server and fails each stdio launch saying why.
package confine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/egressproxy"
	"clopen.dev/pkg/platform/sandbox"
)

// Launcher starts stdio servers confined; its Launch is an ext.Launcher.
// It is safe for concurrent use.
type Launcher struct {
	// Sandbox confines the servers; nil is bubblewrap.
	Sandbox sandbox.Sandbox
	// Dir holds each server's HOME and working dir; required.
	Dir string
	// ReadOnly are dirs mounted read-only at the same paths besides the
	// system's: where the operator installed the servers tenants may run.
	ReadOnly []string
	// UIDs are the tenants' uids, as the workers give them; zero is
	// sandbox.DefaultUIDRange.
	UIDs sandbox.UIDRange
	// Limits bound each server; zero fields are sandbox.DefaultLimits.
	Limits sandbox.Limits

	mu      sync.Mutex
	checked bool
	// egress is the egress proxy's endpoint, and egressEnv the variables
	// that point a server at it (ServeEgress); nil: no way out.
	egress    *sandbox.Endpoint
	egressEnv []string
}

// EgressPort is the loopback port inside each server's sandbox where the
// egress proxy is reached.
const EgressPort = 3130

// ServeEgress serves p on a unix socket in Dir and gives every server
// launched after it a way out through p; stop ends it.
func (l *Launcher) ServeEgress(p *egressproxy.Proxy) (stop func(), err error) {
	if l.Dir == "" {
		return nil, errors.New("confine: no state dir for stdio MCP servers")
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("confine: %w", err)
	}
	ep, env, stop, err := p.ServeSandboxes(filepath.Join(l.Dir, "egress.sock"), EgressPort)
	if err != nil {
		return nil, fmt.Errorf("stdio servers: %w", err)
	}
	l.mu.Lock()
	l.egress, l.egressEnv = &ep, env
	l.mu.Unlock()
	return stop, nil
}

// path is the PATH of every server, inside the sandbox.
const path = "/usr/local/bin:/usr/bin:/bin"

// Launch returns the sandboxed command of tenant's server s, and started,
// to call once the command has started or failed to. ctx ends the process.
func (l *Launcher) Launch(ctx context.Context, tenant string, s events.ResolvedMCPServer) (*exec.Cmd, func(), error) {
	if s.Transport != events.MCPStdio || strings.TrimSpace(s.Command) == "" {
		return nil, nil, fmt.Errorf("MCP server %s is not a stdio server with a command", s.Slug)
	}
	sb, err := l.sandbox(ctx)
	if err != nil {
		return nil, nil, err
	}
	home, work, err := l.dirs(tenant, s)
	if err != nil {
		return nil, nil, err
	}
	uids := l.UIDs
	if uids.Size == 0 {
		uids = sandbox.DefaultUIDRange
	}
	uid := uids.UID(tenant)
	spec := sandbox.Spec{UID: uid, GID: uid, Workspace: work, State: []string{home}, ReadOnly: l.ReadOnly, Limits: l.Limits,
		CommandEnv: serverEnv(s.Env)}
	l.mu.Lock()
	if l.egress != nil {
		spec.Endpoints, spec.Env = []sandbox.Endpoint{*l.egress}, l.egressEnv
	}
	l.mu.Unlock()
	c, err := sb.Command(spec, append([]string{s.Command}, s.Args...))
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox MCP server %s: %w", s.Slug, err)
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.ExtraFiles = c.ExtraFiles
	// bwrap runs as root on the host: its environment is the bridge's
	// choice alone, and the server's own reaches only the server.
	cmd.Env = []string{"PATH=" + path, "HOME=" + home, "LANG=C.UTF-8"}
	cmd.Stderr = &tail{max: 8 << 10}
	return cmd, c.Close, nil
}

// sandbox returns l's sandbox once it has proven to work on this host.
// A failed check is tried again at the next launch.
func (l *Launcher) sandbox(ctx context.Context) (sandbox.Sandbox, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Sandbox == nil {
		l.Sandbox = &sandbox.Bwrap{}
	}
	if !l.checked {
		if err := l.Sandbox.Check(ctx); err != nil {
			return nil, fmt.Errorf("stdio MCP servers run only in the agents' sandbox, which does not work on this bridge's host: %w", err)
		}
		l.checked = true
	}
	return l.Sandbox, nil
}

// dirs makes the server's HOME and working dir, both empty at first.
func (l *Launcher) dirs(tenant string, s events.ResolvedMCPServer) (home, work string, err error) {
	if l.Dir == "" {
		return "", "", errors.New("confine: no state dir for stdio MCP servers")
	}
	scope := s.ProjectID
	if scope == "" {
		scope = "_tenant"
	}
	for _, name := range []string{tenant, scope, s.Slug} {
		if !clean(name) {
			return "", "", fmt.Errorf("confine: %q cannot name a directory", name)
		}
	}
	dir := filepath.Join(l.Dir, tenant, scope, s.Slug)
	home, work = filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", "", fmt.Errorf("confine: %w", err)
		}
	}
	return home, work, nil
}

// clean reports whether name is one path element that stays where it is
// put: ids and slugs are, anything with a separator or dots is not.
func clean(name string) bool {
	return name != "" && len(name) <= 128 && !strings.HasPrefix(name, ".") &&
		!strings.ContainsFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
		})
}

// serverEnv is the server's own env as NAME=value lines.
func serverEnv(vars map[string]string) []string {
	var e []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		e = append(e, k+"="+vars[k])
	}
	return e
}
