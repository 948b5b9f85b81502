package ext_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/mcp-bridge/internal/confine"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// everything is the pinned @modelcontextprotocol/server-everything's
// entry point (scripts/test.sh installs it); the test skips without it,
// and fails under CI=true.
func everything(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CLOPEN_MCP_EVERYTHING")
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CLOPEN_MCP_EVERYTHING=%q: the pinned MCP test server is not installed (scripts/test.sh installs it)", path)
	}
	t.Skip("CLOPEN_MCP_EVERYTHING is not set: scripts/test.sh installs the MCP test server")
	return ""
}

// TestEverythingThroughTheProxy reaches a real third-party server through
// /mcp/ext/<slug> as a tenant's stdio server, in the sandbox, and as a
// remote Streamable HTTP server: its tools listed with the repairs
// applied, its echo called, and the stdio server given the server's
// sealed env.
func TestEverythingThroughTheProxy(t *testing.T) {
	entry := everything(t)
	port := freePort(t)
	remote := exec.Command("node", entry, "streamableHttp")
	remote.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := remote.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remote.Process.Kill(); _ = remote.Wait() })
	waitListening(t, port)

	// The bridge's own launcher: the stdio server runs in the agents'
	// sandbox, which sees the installed server read-only.
	confined := &confine.Launcher{Dir: t.TempDir(), ReadOnly: []string{packageDir(entry)}}
	var launched []string
	launch := func(ctx context.Context, tenant string, s events.ResolvedMCPServer) (*exec.Cmd, func(), error) {
		launched = append(launched, tenant+":"+s.Slug)
		return confined.Launch(ctx, tenant, s)
	}
	h := ext.New(servers{
		tenantA + "//docs": {MCPServerDef: events.MCPServerDef{Slug: "docs", Transport: events.MCPHTTP,
			URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}, Headers: map[string]string{"X-Api-Key": "k"}},
		tenantA + "/" + project + "/local": {MCPServerDef: events.MCPServerDef{ProjectID: project, Slug: "local",
			Transport: events.MCPStdio, Command: "node", Args: []string{entry, "stdio"}}, Env: map[string]string{"EVERYTHING_TOKEN": "sealed-env-value"}},
	}, ext.Options{AllowHosts: []string{"127.0.0.1"}, Launch: launch})
	t.Cleanup(func() { _ = h.Close() })
	b := bridge(t, h)

	for _, slug := range []string{"docs", "local"} {
		t.Run(slug, func(t *testing.T) {
			cs, err := connectAs(t, b.URL, "a1", slug)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, tl := range list.Tools {
				names[tl.Name] = true
				if tl.OutputSchema != nil {
					t.Errorf("tool %s kept its outputSchema", tl.Name)
				}
				raw, _ := json.Marshal(tl.InputSchema)
				if again, err := ext.RepairSchema(raw); err != nil || string(again) != string(raw) {
					t.Errorf("tool %s: input schema %s is not as repaired (%s)", tl.Name, raw, again)
				}
			}
			if !names["echo"] || !names["get-structured-content"] || len(names) < 5 {
				t.Errorf("tools = %v; want the server's, echo and get-structured-content among them", names)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through " + slug}})
			if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "through "+slug) {
				t.Fatalf("echo = %+v, %v", res, err)
			}
			if slug == "local" {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-env"})
				if err != nil || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "sealed-env-value") {
					t.Errorf("get-env = %+v, %v; want the server's env", res, err)
				}
			}
		})
	}
	if strings.Join(launched, ",") != tenantA+":local" {
		t.Errorf("launched %v, want the stdio server once, for tenant A", launched)
	}
}

// packageDir is where the server of entry was installed, the dir holding
// its node_modules: what an operator gives the bridge to mount read-only.
func packageDir(entry string) string {
	d := entry
	for filepath.Base(d) != "node_modules" && d != filepath.Dir(d) {
		d = filepath.Dir(d)
	}
	return filepath.Dir(d)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the MCP test server did not listen on %d", port)
}
