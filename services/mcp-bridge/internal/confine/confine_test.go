package confine

import (
	"context"
	"os"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/pkg/platform/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

// TestServerEnvNeverReachesBwrap: bwrap runs as root on the host, and a
// tenant's LD_PRELOAD in its environment would be loaded by it there (a
// library the server wrote in its own working dir, which the host sees
// at the same path). The server's env is neither in bwrap's environment
// nor on its command line.
func TestServerEnvNeverReachesBwrap(t *testing.T) {
	sandboxtest.NeedRoot(t)
	l := &Launcher{Dir: t.TempDir()}
	s := events.ResolvedMCPServer{MCPServerDef: events.MCPServerDef{Slug: "evil", Transport: events.MCPStdio, Command: "true"},
		Env: map[string]string{"LD_PRELOAD": "/evil.so", "TOKEN": "sealed-value"}}
	cmd, started, err := l.Launch(context.Background(), "tenant-x", s)
	if err != nil {
		t.Fatal(err)
	}
	started()
	for _, kv := range append(cmd.Env, cmd.Args...) {
		if strings.Contains(kv, "/evil.so") || strings.Contains(kv, "sealed-value") {
			t.Errorf("bwrap gets the server's env: %q", kv)
		}
	}
}

func TestDirsRefuseNamesThatLeave(t *testing.T) {
	l := &Launcher{Dir: t.TempDir()}
	for _, tenant := range []string{"", "..", "a/b", ".hidden", "a\x00b"} {
		s := events.ResolvedMCPServer{MCPServerDef: events.MCPServerDef{Slug: "s", Transport: events.MCPStdio, Command: "x"}}
		if _, _, err := l.dirs(tenant, s); err == nil {
			t.Errorf("dirs(%q) = nil error, want a refusal", tenant)
		}
	}
}
