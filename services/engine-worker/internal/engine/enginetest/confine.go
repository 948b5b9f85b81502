package enginetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/services/engine-worker/internal/engine"
)

// bridgeEnv, when set in a test binary's environment to "SOCKET ADDR",
// makes Main forward every connection on the unix socket SOCKET to the TCP
// address ADDR: run inside the namespace, it lets a confined agent reach
// fakellm and the MCP server there.
const bridgeEnv = "CLOPEN_ENGINETEST_BRIDGE"

// confined is a Sandbox's agent confinement: the worker's bubblewrap
// sandbox, its only endpoints bridges into the namespace.
type confined struct {
	dir string
	mu  sync.Mutex
	eps []sandbox.Endpoint // every address bridged so far
}

// Confine makes the sandbox's agents run confined by the worker's
// sandbox (bubblewrap) instead of through Wrap: every helper address
// (fakellm, MCP servers started from now on) is bridged in at its own
// port, as the worker bridges its loopback model server. It returns the
// Sandboxing to give the adapter; call it once, with the test that owns
// the sandbox.
func (sb *Sandbox) Confine(t testing.TB) *engine.Sandboxing {
	t.Helper()
	if sb.confined == nil {
		sb.confined = &confined{dir: t.TempDir()}
		sb.bridge(t, sb.BaseURL)
	}
	return &engine.Sandboxing{Sandbox: &sandbox.Bwrap{}, Endpoints: func(string) ([]sandbox.Endpoint, error) {
		sb.confined.mu.Lock()
		defer sb.confined.mu.Unlock()
		return append([]sandbox.Endpoint(nil), sb.confined.eps...), nil
	}}
}

// bridge makes the address of rawURL reachable from confined agents, at
// the same port; nothing when the sandbox is not confining.
func (sb *Sandbox) bridge(t testing.TB, rawURL string) {
	t.Helper()
	if sb.confined == nil {
		return
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("bridge %q: %v", rawURL, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("bridge %q: no port", rawURL)
	}
	sock := filepath.Join(sb.confined.dir, "bridge-"+u.Port()+".sock")
	sb.helper(t, bridgeEnv+"="+sock+" "+u.Host, "bridge listening on ")
	ep := sandbox.Endpoint{Port: port, Socket: sock}
	sb.confined.mu.Lock()
	sb.confined.eps = append(sb.confined.eps, ep)
	sb.confined.mu.Unlock()
	// Registered after the helper's cleanup, so it runs first: no agent
	// started later is given a socket that is gone.
	t.Cleanup(func() {
		sb.confined.mu.Lock()
		defer sb.confined.mu.Unlock()
		sb.confined.eps = slices.DeleteFunc(sb.confined.eps, func(e sandbox.Endpoint) bool { return e == ep })
	})
}

// serveBridge forwards connections on the unix socket of spec ("SOCKET
// ADDR") to ADDR until ctx ends.
func serveBridge(ctx context.Context, spec string, stdout io.Writer) error {
	sock, addr, ok := strings.Cut(spec, " ")
	if !ok {
		return fmt.Errorf("%s=%q: want SOCKET ADDR", bridgeEnv, spec)
	}
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	// The sandbox's uid connects; only confined agents see the socket.
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		return err
	}
	fmt.Fprintf(stdout, "bridge listening on %s\n", sock)
	go func() { <-ctx.Done(); _ = ln.Close() }()
	sandbox.Forward(ln, "tcp", addr)
	return nil
}
