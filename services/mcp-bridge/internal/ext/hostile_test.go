package ext_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/sandbox/sandboxtest"
	"clopen.dev/services/mcp-bridge/internal/confine"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// hostileArg starts the test binary as a tenant's hostile stdio MCP
// server: its one tool, try, attempts what it is told and says whether
// it could ("ok …") or not ("refused …").
const hostileArg = "__hostile-mcp-server"

// bridgeSecret is a key in the bridge's environment.
const bridgeSecret = "CLOPEN_MASTER_KEY"

func serveHostile() {
	boot := rand.Text()
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "try", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Op, Arg string }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: try(in.Op, in.Arg, boot)}}}, nil
		})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
}

func try(op, arg, boot string) string {
	verdict := func(detail string, err error) string {
		if err != nil {
			return "refused " + err.Error()
		}
		return "ok " + detail
	}
	switch op {
	case "read":
		b, err := os.ReadFile(arg)
		return verdict(string(b), err)
	case "write":
		return verdict(arg, os.WriteFile(arg, []byte("written by a stdio server"), 0o644))
	case "dial":
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		if err == nil {
			c.Close()
		}
		return verdict(arg, err)
	case "environ":
		// Its own environment, its parent's and its namespace's init's.
		seen := strings.Join(os.Environ(), "\n")
		for _, p := range []string{fmt.Sprintf("/proc/%d/environ", os.Getppid()), "/proc/1/environ"} {
			b, _ := os.ReadFile(p)
			seen += string(b)
		}
		if strings.Contains(seen, arg) {
			return "ok the bridge's secret is readable"
		}
		return "refused the secret is nowhere in reach"
	case "boot":
		return "ok " + boot
	case "crash":
		fmt.Fprintln(os.Stderr, "hostile: crashing on purpose")
		os.Exit(3)
	}
	return "refused unknown op " + op
}

// unconfined starts a stdio server on the bridge's host as it is: what the
// bridge must never do, kept here to show every attack below works then.
func unconfined(ctx context.Context, _ string, s events.ResolvedMCPServer) (*exec.Cmd, func(), error) {
	cmd := exec.CommandContext(ctx, s.Command, s.Args...)
	return cmd, func() {}, nil
}

// hostileBridge serves tenant B's hostile stdio server through a Handler
// that launches it with launch, and connects to it as B's run.
func hostileBridge(t *testing.T, launch ext.Launcher, o ext.Options) (*mcp.ClientSession, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o.Launch = launch
	h := ext.New(servers{tenantB + "//hostile": {MCPServerDef: events.MCPServerDef{Slug: "hostile",
		Transport: events.MCPStdio, Command: exe, Args: []string{hostileArg}}}}, o)
	t.Cleanup(func() { _ = h.Close() })
	base := bridge(t, h).URL
	cs, err := connectAs(t, base, "b-hostile", "hostile")
	if err != nil {
		t.Fatal(err)
	}
	return cs, base
}

func callTry(t *testing.T, cs *mcp.ClientSession, op, arg string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "try", Arguments: map[string]any{"op": op, "arg": arg}})
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", fmt.Errorf("try %s: no content", op)
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// confined is the bridge's launcher over dir, with the test binary (the
// hostile server) installed read-only.
func confined(t *testing.T, dir string) ext.Launcher {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return (&confine.Launcher{Dir: dir, ReadOnly: []string{filepath.Dir(exe)}}).Launch
}

// TestStdioServerIsConfined: tenant B's stdio server tries to read tenant
// A's files, read the bridge's environment, reach NATS and Postgres on the
// host's loopback and write outside its dirs. Each attempt succeeds when
// the server is started on the host as it is, and fails in the sandbox,
// where the server can still use its own working dir.
func TestStdioServerIsConfined(t *testing.T) {
	sandboxtest.NeedRoot(t)
	t.Setenv(bridgeSecret, "bridge-secret-value")
	dir := t.TempDir()
	// Tenant A's server's file, where the bridge keeps it.
	theirs := filepath.Join(dir, tenantA, "_tenant", "notes", "work", "notes.txt")
	if err := os.MkdirAll(filepath.Dir(theirs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(theirs, []byte("tenant A's notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Chmod(outside, 0o777); err != nil {
		t.Fatal(err)
	}
	nats, err := net.Listen("tcp", "127.0.0.1:0") // stands for NATS on the bridge's host
	if err != nil {
		t.Fatal(err)
	}
	defer nats.Close()
	go func() {
		for {
			c, err := nats.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	postgres := "127.0.0.1:5432"
	if u, err := url.Parse(os.Getenv("DATABASE_URL")); err == nil && u.Host != "" {
		postgres = u.Host
	}
	attacks := []struct{ name, op, arg string }{
		{"read another tenant's files", "read", theirs},
		{"read the bridge's environment", "environ", "bridge-secret-value"},
		{"reach NATS on the host's loopback", "dial", nats.Addr().String()},
		{"reach Postgres on the host's loopback", "dial", postgres},
		{"write outside its dirs", "write", filepath.Join(outside, "planted")},
	}
	for _, launch := range []struct {
		name   string
		launch ext.Launcher
		want   string
	}{{"on the host as is", unconfined, "ok"}, {"in the sandbox", confined(t, dir), "refused"}} {
		t.Run(launch.name, func(t *testing.T) {
			cs, _ := hostileBridge(t, launch.launch, ext.Options{})
			for _, a := range attacks {
				got, err := callTry(t, cs, a.op, a.arg)
				if err != nil {
					t.Fatalf("%s: %v", a.name, err)
				}
				if !strings.HasPrefix(got, launch.want) {
					t.Errorf("%s: %s, want %s", a.name, got, launch.want)
				}
			}
			if launch.want == "refused" {
				if got, err := callTry(t, cs, "write", "mine.txt"); err != nil || !strings.HasPrefix(got, "ok") {
					t.Errorf("write its own working dir: %s %v", got, err)
				}
				if _, err := os.Stat(filepath.Join(dir, tenantB, "_tenant", "hostile", "work", "mine.txt")); err != nil {
					t.Errorf("the server's file is not in its working dir: %v", err)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err != nil {
		t.Errorf("the unconfined server's write did not land, so the test proves nothing: %v", err)
	}
}

// TestStdioServerLifecycle: one process serves every call until it
// crashes (the call in flight says so, with its stderr) or idles out;
// the next call starts it again.
func TestStdioServerLifecycle(t *testing.T) {
	sandboxtest.NeedRoot(t)
	launch := confined(t, t.TempDir())
	var pids []int
	counting := func(ctx context.Context, tenant string, s events.ResolvedMCPServer) (*exec.Cmd, func(), error) {
		cmd, started, err := launch(ctx, tenant, s)
		return cmd, func() {
			started()
			if cmd.Process != nil {
				pids = append(pids, cmd.Process.Pid)
			}
		}, err
	}
	cs, base := hostileBridge(t, counting, ext.Options{IdleTimeout: time.Second})
	first, _ := callTry(t, cs, "boot", "")
	if again, _ := callTry(t, cs, "boot", ""); again != first || len(pids) != 1 {
		t.Fatalf("two calls: boots %q %q, %d processes; want one process", first, again, len(pids))
	}

	_, err := callTry(t, cs, "crash", "")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "crashing on purpose") ||
		!strings.Contains(err.Error(), "started again") {
		t.Errorf("the call that crashed the server: %v; want its exit status, stderr and what happens next", err)
	}
	after, err := callTry(t, cs, "boot", "")
	if err != nil || after == first || len(pids) != 2 {
		t.Fatalf("after the crash: %q %v, %d processes; want a new process", after, err, len(pids))
	}

	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pids[1], 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the idle server (pid %d) is still running", pids[1])
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The agent's idle session ended with it: a client initializes again.
	if cs, err = connectAs(t, base, "b-hostile", "hostile"); err != nil {
		t.Fatal(err)
	}
	if again, err := callTry(t, cs, "boot", ""); err != nil || again == after || len(pids) != 3 {
		t.Errorf("after idling out: %q %v, %d processes; want a new process", again, err, len(pids))
	}
}
