package engines

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/egressproxy"
	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/services/engine-worker/internal/engine"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the sandbox's init, when the tests confine a process
	os.Exit(m.Run())
}

// A confined process reaches an allowed host through the egress proxy, and
// nothing else: not a host the operator did not allow, not any address
// directly. The allowed name is mapped to a local TLS server by the
// proxy's dialer (the real one refuses loopback addresses).
func TestSandboxReachesOnlyAllowedHosts(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the sandbox needs root")
		}
		t.Skip("the sandbox needs root")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("allowed-ok")) }))
	defer srv.Close()
	sb := &sandbox.Bwrap{}
	sbx := &engine.Sandboxing{Sandbox: sb}
	dialed := map[string]int{}
	proxy := &egressproxy.Proxy{
		Allow: []egressproxy.Rule{{Host: "registry.allowed.test"}},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed[addr]++
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Listener.Addr().String())
		},
	}
	if err := allowEgress(sbx, proxy, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	confined, err := sbx.For("tenant-egress", curl, ws, "")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd, err := sb.Command(confined.Spec, append([]string{curl, "-sS", "--max-time", "10"}, args...))
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
		c.ExtraFiles = cmd.ExtraFiles
		c.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := c.CombinedOutput()
		cmd.Close()
		return string(out), err
	}
	if out, err := run("-k", "https://registry.allowed.test/pkg"); err != nil || out != "allowed-ok" {
		t.Errorf("allowed host through the proxy = %q, %v; want allowed-ok", out, err)
	}
	if out, err := run("-k", "https://evil.example/"); err == nil || !strings.Contains(out, "403") {
		t.Errorf("a host not allowed = %q, %v; want the proxy's 403", out, err)
	}
	if out, err := run("-k", "--noproxy", "*", "https://"+srv.Listener.Addr().String()+"/"); err == nil {
		t.Errorf("a direct connection from the sandbox = %q, want a failure", out)
	}
	if dialed["registry.allowed.test:443"] != 1 || len(dialed) != 1 {
		t.Errorf("proxy dialed %v, want only registry.allowed.test:443 once", dialed)
	}
}
