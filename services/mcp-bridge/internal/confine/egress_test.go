package confine

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/egressproxy"
	"clopen.dev/pkg/platform/sandbox/sandboxtest"
)

// TestStdioServerReachesOnlyAllowedHosts: with the operator's allow-list
// a stdio server reaches an allowed host through the bridge's egress
// proxy, and nothing else: not a host left off the list, not any address
// directly. Without the list it has no way out at all. The allowed name
// is mapped to a local TLS server by the proxy's dialer (the real one
// refuses loopback addresses).
func TestStdioServerReachesOnlyAllowedHosts(t *testing.T) {
	sandboxtest.NeedRoot(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("no curl: the test's stdio server is curl")
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("allowed-ok")) }))
	defer srv.Close()
	var mu sync.Mutex
	dialed := map[string]int{}
	proxy := &egressproxy.Proxy{
		Allow: []egressproxy.Rule{{Host: "api.allowed.test"}},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialed[addr]++
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Listener.Addr().String())
		},
	}
	run := func(l *Launcher, args ...string) (string, error) {
		s := events.ResolvedMCPServer{MCPServerDef: events.MCPServerDef{Slug: "fetcher", Transport: events.MCPStdio,
			Command: curl, Args: append([]string{"-sS", "--max-time", "10"}, args...)}}
		cmd, started, err := l.Launch(context.Background(), "tenant-egress", s)
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.Output()
		started()
		return string(out) + cmd.Stderr.(*tail).String(), err
	}

	closed := &Launcher{Dir: t.TempDir()}
	if out, err := run(closed, "-k", "https://api.allowed.test/v1"); err == nil {
		t.Errorf("without an allow-list the server reached out: %q", out)
	}

	open := &Launcher{Dir: t.TempDir()}
	stop, err := open.ServeEgress(proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if out, err := run(open, "-k", "https://api.allowed.test/v1"); err != nil || out != "allowed-ok" {
		t.Errorf("allowed host through the proxy = %q, %v; want allowed-ok", out, err)
	}
	if out, err := run(open, "-k", "https://evil.example/"); err == nil || !strings.Contains(out, "403") {
		t.Errorf("a host not allowed = %q, %v; want the proxy's 403", out, err)
	}
	if out, err := run(open, "-k", "--noproxy", "*", "https://"+srv.Listener.Addr().String()+"/"); err == nil {
		t.Errorf("a direct connection from the sandbox = %q, want a failure", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if dialed["api.allowed.test:443"] != 1 || len(dialed) != 1 {
		t.Errorf("the proxy dialed %v, want api.allowed.test:443 once", dialed)
	}
}
