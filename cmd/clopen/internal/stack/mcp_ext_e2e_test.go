package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/egress"
	"clopen.dev/services/artifacts"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// mcpExtEngines are the engines TestMCPExternalServer runs a turn of.
// Claude Code defers MCP tools behind its ToolSearch tool, which fakellm
// calls first. Qwen names an MCP call by the bare tool name until it
// completes; with clopen and one tenant server in the session the adapter
// still tells which server has it (acp.bareMCPServer).
var mcpExtEngines = []events.EngineType{events.EngineClaudeCode, events.EnginePi, events.EngineCodex, events.EngineGemini, events.EngineQwen}

// echoServer is a remote MCP server (Streamable HTTP) with one tool, echo;
// it counts the calls and keeps the Authorization header it last saw.
type echoServer struct {
	*httptest.Server
	calls atomic.Int32
	auth  atomic.Value
}

func startEchoServer(t *testing.T) *echoServer {
	t.Helper()
	e := &echoServer{}
	e.auth.Store("")
	s := mcp.NewServer(&mcp.Implementation{Name: "echo-server", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes its text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			e.calls.Add(1)
			var in struct{ Text string }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed: " + in.Text}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(e.Close)
	return e
}

// TestMCPExternalServer: a tenant adds a remote MCP server over REST (its
// header sealed), the gateway's probe reaches it through the bridge, and a
// real engine turn (fakellm's @@MCP@@ calls the offered tool named like
// echo) calls its echo tool through the worker's MCP proxy and the bridge:
// the server sees the call with the sealed header, and the saved tool_use
// is mcp__<slug>__echo. Another tenant's live run, even with a token
// naming the slug, cannot reach the first tenant's server.
func TestMCPExternalServer(t *testing.T) {
	setup, _ := engineSetup(t, events.EnginePi)
	ready := installedOf(t, setup, mcpExtEngines)
	echo := startEchoServer(t)
	h := start(t, Config{Dir: t.TempDir(), Engines: setup,
		Artifacts: artifacts.Config{Egress: egress.Policy{Allow: []string{"127.0.0.1"}}}})
	for _, e := range ready {
		spec, _ := engines.Lookup(e)
		h.waitEngine(e, spec.Version)
	}
	ctx := context.Background()
	a := h.account("mcpext")
	const slug = "echoes"
	if _, err := a.c.CreateMCPServer(ctx, client.Layer{}, api.MCPServerInput{Slug: slug, Transport: events.MCPHTTP,
		URL: echo.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer upstream-secret"}}); err != nil {
		t.Fatalf("create server: %v", err)
	}
	st, err := a.c.ProbeMCPServer(ctx, client.Layer{}, slug)
	if err != nil || st.State != "ok" || st.Tools != 1 {
		t.Fatalf("probe = %+v, %v; want ok with 1 tool", st, err)
	}

	for _, e := range ready {
		t.Run(string(e), func(t *testing.T) {
			before := echo.calls.Load()
			s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: e})
			if err != nil {
				t.Fatal(err)
			}
			sent, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "Echo something @@MCP@@"})
			if err != nil {
				t.Fatal(err)
			}
			r := waitRESTRun(t, a.c, sent.RunID, events.RunCompleted, 3*time.Minute)
			waitToolUse(t, a.c, s.ID, "mcp__"+slug+"__echo", 30*time.Second)
			if echo.calls.Load() == before {
				t.Errorf("the server saw no call of echo (run %+v)", r)
			}
			if got := echo.auth.Load(); got != "Bearer upstream-secret" {
				t.Errorf("the server saw Authorization %q, want the sealed header", got)
			}
		})
	}

	// Another tenant's live run, with a token naming the slug and its own
	// dispatch token, is told there is no such server.
	other := newTenant()
	sess, run, _, _ := h.parkOnQuestion(other)
	claims := bustoken.Claims{TenantID: other.TenantID, ProjectID: other.project, SessionID: sess.ID, RunID: run.RunID,
		Engine: string(events.EngineScripted), Servers: []string{slug}}
	calls := echo.calls.Load()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	_, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.st.MCPURL + "/mcp/ext/" + slug, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: runTokens{mcp: bustokentest.Sign(t, h.st.Keys, bustoken.MCP, claims),
			dispatch: bustokentest.Sign(t, h.st.Keys, bustoken.Dispatch, claims)}}}, nil)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "not found") {
		t.Errorf("another tenant's run reached %s: %v, want 404", slug, err)
	}
	if echo.calls.Load() != calls {
		t.Error("the other tenant's attempt reached the server")
	}
}

// runTokens sets a run's mcp token and dispatch token on every request, as
// the worker's MCP proxy does.
type runTokens struct{ mcp, dispatch string }

func (r runTokens) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.mcp)
	req.Header.Set(bustoken.DispatchHeader, r.dispatch)
	return http.DefaultTransport.RoundTrip(req)
}
