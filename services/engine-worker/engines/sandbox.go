package engines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"clopen.dev/pkg/platform/egress"
	"clopen.dev/pkg/platform/egressproxy"
	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/mcpproxy"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// EnvSandbox chooses how agent processes are confined: unset or "bwrap"
// (bubblewrap, checked at start) or "off" (unconfined, logged at Warn on
// every start; only for a host that is itself the boundary).
const EnvSandbox = "CLOPEN_SANDBOX"

// ErrNoSandbox is a host on which the sandbox does not work (bubblewrap
// missing, not root): a worker then offers only the scripted engine
// (Setup.NoSandbox). A bad CLOPEN_SANDBOX value is another error.
var ErrNoSandbox = errors.New("no working sandbox for agent processes")

// Sandboxing returns the confinement of the worker's agent processes as
// EnvSandbox says, after proving it works on this host; nil with no error
// only for the explicit opt-out. runDir holds the bridges to loopback model
// servers.
func Sandboxing(ctx context.Context, getenv func(string) string, runDir string, logger *slog.Logger) (*engine.Sandboxing, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch v := getenv(EnvSandbox); v {
	case "off":
		if getenv(egressproxy.EnvAllow) != "" {
			logger.Warn(egressproxy.EnvAllow + " has no effect with " + EnvSandbox + "=off: unconfined agents reach every destination")
		}
		logger.Warn("agent processes run UNCONFINED: " + EnvSandbox + "=off; every tenant's agent can read the worker's files and environment and reach its network")
		return nil, nil
	case "", "bwrap":
		sb := &sandbox.Bwrap{}
		if err := sb.Check(ctx); err != nil {
			return nil, fmt.Errorf("%w (%w); fix it, or set %s=off to run agents unconfined", ErrNoSandbox, err, EnvSandbox)
		}
		if err := os.MkdirAll(runDir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		sbx := &engine.Sandboxing{Sandbox: sb, Endpoints: (&loopbackBridges{dir: runDir, log: logger}).endpoints,
			Proxies: &modelproxy.Pool{Dir: runDir, Options: modelproxy.Options{Allow: ProxyAllow(getenv), Logger: logger}}}
		var err error
		if sbx.MCP, err = mcpproxy.Listen(runDir); err != nil {
			return nil, err
		}
		rules, err := egressproxy.ParseAllow(egressproxy.EnvAllow, getenv(egressproxy.EnvAllow))
		if err != nil {
			return nil, err
		}
		if err := allowEgress(sbx, &egressproxy.Proxy{Allow: rules, Logger: logger}, runDir); err != nil {
			return nil, err
		}
		return sbx, nil
	default:
		return nil, fmt.Errorf("%s=%q: want bwrap or off", EnvSandbox, v)
	}
}

// EgressPort is the loopback port inside every sandbox where the egress
// proxy listens, when the operator allows any destination.
const EgressPort = 3128

// allowEgress serves proxy, when it allows any destination, and gives
// every sandbox its endpoint and the proxy variables agents and their
// tools read.
func allowEgress(sbx *engine.Sandboxing, proxy *egressproxy.Proxy, runDir string) error {
	if len(proxy.Allow) == 0 {
		return nil
	}
	ep, env, _, err := proxy.ServeSandboxes(filepath.Join(runDir, "egress.sock"), EgressPort)
	if err != nil {
		return err
	}
	sbx.Egress, sbx.Env = &ep, env
	if proxy.Logger != nil {
		proxy.Logger.Info("agents may reach the operator's allowed destinations through the egress proxy", "allow", proxy.Allow)
	}
	return nil
}

// ProxyAllow is the hosts the model proxies may reach over plain http and
// on non-public addresses: those the operator lists in
// CLOPEN_PROVIDER_ALLOW, and the host of CLOPEN_LLM_BASE_URL, the model
// server the operator points every engine at.
func ProxyAllow(getenv func(string) string) []string {
	allow := egress.ParseAllow(getenv(egress.EnvAllow))
	if u, err := url.Parse(getenv("CLOPEN_LLM_BASE_URL")); err == nil && u.Hostname() != "" {
		allow = append(allow, strings.ToLower(u.Hostname()))
	}
	return allow
}

// loopbackBridges lets a confined agent reach a model server on the
// worker's loopback (`clopen dev --fakellm`, a local gateway): a unix
// socket per address, forwarding to it, mounted into the sandbox at the
// same port, for a process given no secret to keep (one with a secret goes
// through its model proxy, see engine.Sandboxing.Route). Other model URLs
// get no endpoint.
type loopbackBridges struct {
	dir string
	log *slog.Logger
	mu  sync.Mutex
	by  map[string]string // host:port -> socket
}

func (b *loopbackBridges) endpoints(baseURL string) ([]sandbox.Endpoint, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("model URL %q: %w", baseURL, err)
	}
	ip := net.ParseIP(u.Hostname())
	if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, nil
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("model URL %q: a loopback address needs a port", baseURL)
	}
	addr := net.JoinHostPort(u.Hostname(), u.Port())
	b.mu.Lock()
	defer b.mu.Unlock()
	if sock, ok := b.by[addr]; ok {
		return []sandbox.Endpoint{{Port: port, Socket: sock}}, nil
	}
	sock := filepath.Join(b.dir, "model-"+strconv.Itoa(port)+".sock")
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("model bridge: %w", err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("model bridge: %w", err)
	}
	go sandbox.Forward(ln, "tcp", addr)
	if b.by == nil {
		b.by = map[string]string{}
	}
	b.by[addr] = sock
	return []sandbox.Endpoint{{Port: port, Socket: sock}}, nil
}
