package natsx

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/platform/natstest"
)

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		have string
		want bool
	}{
		{"2.11.0", true}, {"2.12.3", true}, {"3.0.0", true}, {"2.11", true}, {"2.11.0-RC.1", true},
		{"2.10.29", false}, {"2.9.10", false}, {"2.1.100", false}, {"1.99.99", false}, {"", false}, {"x", false},
	} {
		if got := versionAtLeast(c.have, MinServerVersion); got != c.want {
			t.Errorf("versionAtLeast(%q, %q) = %v, want %v", c.have, MinServerVersion, got, c.want)
		}
	}
}

// The embedded server, the one Clopen ships with, is new enough.
func TestRequireServerAcceptsTheEmbeddedServer(t *testing.T) {
	nc, _ := natstest.Connect(t, natstest.Start(t))
	if err := RequireServer(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
}

// A server too old for Clopen is refused by name. It runs a system
// nats-server older than MinServerVersion when there is one (Debian 12
// ships 2.9), since no library embeds an old server.
func TestRequireServerRefusesAnOldServer(t *testing.T) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Skip("no system nats-server to try")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(string(out), "nats-server:")), "v")
	if versionAtLeast(version, MinServerVersion) {
		t.Skipf("the system nats-server is %s, not older than %s", version, MinServerVersion)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command(bin, "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", t.TempDir())
	srv.Stdout, srv.Stderr = os.Stderr, os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	var nc *nats.Conn
	for deadline := time.Now().Add(10 * time.Second); ; {
		if nc, err = nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port)); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	err = RequireServer(t.Context(), nc)
	if err == nil || !strings.Contains(err.Error(), version) || !strings.Contains(err.Error(), MinServerVersion) {
		t.Fatalf("RequireServer on %s = %v, want a refusal naming %s and %s", version, err, version, MinServerVersion)
	}
}
