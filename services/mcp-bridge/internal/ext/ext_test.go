package ext_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/mcp-bridge/internal/binding"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// servers resolves by tenant, project and slug as the artifacts service
// does: the project's own server, else the tenant's.
type servers map[string]events.ResolvedMCPServer

func (s servers) Server(_ context.Context, tenant, project, slug string) (events.ResolvedMCPServer, error) {
	for _, k := range []string{tenant + "/" + project + "/" + slug, tenant + "//" + slug} {
		if d, ok := s[k]; ok {
			return d, nil
		}
	}
	return events.ResolvedMCPServer{}, ext.ErrNotFound
}

// upstream is a real MCP server over Streamable HTTP: echo, big (300 kB of
// text), hidden, and a schema with a $ref to a twin, one to nowhere and
// an outputSchema.
type upstream struct {
	*httptest.Server
	auth  atomic.Value // the Authorization header of the last request
	calls atomic.Int32
}

const echoSchema = `{"type":"object","properties":{"text":{"type":"string"},"opts":{"$ref":"#/definitions/Opts"},
	"gone":{"$ref":"#/$defs/Missing","description":"kept"},"far":{"$ref":"https://schemas.example/x.json"}},
	"$defs":{"Opts":{"type":"object"}}}`

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.auth.Store("")
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(echoSchema),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.calls.Add(1)
			var in struct{ Text string }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			res := text(in.Text)
			res.StructuredContent = map[string]any{"text": in.Text}
			return res, nil
		})
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.calls.Add(1)
			return text(strings.Repeat("é", 150_000)), nil
		})
	s.AddTool(&mcp.Tool{Name: "hidden", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.calls.Add(1)
			return text("should not be reached"), nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

const (
	tenantA, tenantB = "tenant-a", "tenant-b"
	project          = "proj"
)

// runs are the runs the test middleware binds requests to, by the
// X-Test-Run header: what the bridge's token check does with a token.
var runs = map[string]binding.Run{
	"a1":        {TenantID: tenantA, ProjectID: project, RunID: "a1", Engine: "claude", Servers: []string{"docs", "local"}},
	"a2":        {TenantID: tenantA, ProjectID: project, RunID: "a2", Engine: "claude", Servers: []string{"docs"}},
	"a-other":   {TenantID: tenantA, ProjectID: project, RunID: "a3", Engine: "claude", Servers: []string{"other"}},
	"a-codex":   {TenantID: tenantA, ProjectID: project, RunID: "a4", Engine: "codex", Servers: []string{"docs"}},
	"b1":        {TenantID: tenantB, ProjectID: project, RunID: "b1", Engine: "claude", Servers: []string{"docs"}},
	"b-hostile": {TenantID: tenantB, ProjectID: project, RunID: "b2", Engine: "claude", Servers: []string{"hostile"}},
	"no-token":  {},
}

// bridge mounts h as the bridge does, behind a middleware that binds each
// request to the run its X-Test-Run header names (none for "no-token").
func bridge(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(ext.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get("X-Test-Run"); name != "no-token" {
			r = r.WithContext(binding.With(r.Context(), runs[name]))
		}
		h.ServeHTTP(w, r)
	}))
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

type asRun struct{ run string }

func (a asRun) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Run", a.run)
	return http.DefaultTransport.RoundTrip(r)
}

// connectAs opens an MCP session with the bridge's slug as run.
func connectAs(t *testing.T, base, run, slug string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + ext.Pattern + slug,
		HTTPClient: &http.Client{Transport: asRun{run}}, DisableStandaloneSSE: true}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func newProxy(t *testing.T, up *upstream, o ext.Options) *ext.Handler {
	t.Helper()
	if o.HTTPClient == nil && o.AllowHosts == nil {
		o.HTTPClient = &http.Client{} // the test upstream is on loopback
	}
	h := ext.New(servers{
		tenantA + "//docs": {MCPServerDef: events.MCPServerDef{Slug: "docs", Transport: events.MCPHTTP, URL: up.URL,
			Exposure: events.MCPExposure{Engines: []events.EngineType{events.EngineClaudeCode, "claude"},
				DisabledTools: map[string][]string{"claude": {"hidden"}}}},
			Headers: map[string]string{"Authorization": "Bearer up-secret"}},
		tenantA + "/" + project + "/local": {MCPServerDef: events.MCPServerDef{ProjectID: project, Slug: "local",
			Transport: events.MCPStdio, Command: "server"}},
	}, o)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func TestProxyListsRepairedToolsAndCallsThem(t *testing.T) {
	up := startUpstream(t)
	b := bridge(t, newProxy(t, up, ext.Options{MaxOutput: 1000}))
	cs, err := connectAs(t, b.URL, "a1", "docs")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var schema map[string]any
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.OutputSchema != nil {
			t.Errorf("tool %s kept its outputSchema %v", tl.Name, tl.OutputSchema)
		}
		if tl.Name == "echo" {
			schema, _ = tl.InputSchema.(map[string]any)
		}
	}
	if strings.Join(names, ",") != "big,echo" {
		t.Errorf("tools = %v, want big and echo (hidden is disabled for claude)", names)
	}
	props, _ := schema["properties"].(map[string]any)
	ref := func(p string) any { m, _ := props[p].(map[string]any); return m["$ref"] }
	if ref("opts") != "#/$defs/Opts" || ref("gone") != nil || ref("far") != nil || props["gone"].(map[string]any)["description"] != "kept" {
		t.Errorf("repaired schema = %v; want opts pointed at its $defs twin, gone's and far's $ref removed", schema)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello through the bridge"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hello through the bridge" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	if got := up.auth.Load(); got != "Bearer up-secret" {
		t.Errorf("upstream saw Authorization %q, want the server's sealed header", got)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	first := res.Content[0].(*mcp.TextContent).Text
	last := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	if len(first) > 1000 || len(first) < 998 || !strings.Contains(last, "299000 bytes over its 1000-byte limit") {
		t.Errorf("big output: first %d bytes, note %q; want it cut to the 1000-byte limit with a note", len(first), last)
	}
	before := up.calls.Load()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hidden"}); err == nil && !res.IsError {
		t.Errorf("hidden tool called: %+v", res)
	}
	if up.calls.Load() != before {
		t.Error("a hidden tool's call reached the server")
	}
}

// post sends one JSON-RPC message to the bridge as run, with sessionID
// when not empty, and returns the status and the session id answered.
func post(t *testing.T, base, run, slug, sessionID, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+ext.Pattern+slug, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-Run", run)
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// TestProxyRefusesWhatTheRunMayNotReach: every way a request could reach a
// server that is not its run's is refused, and none reaches the server.
func TestProxyRefusesWhatTheRunMayNotReach(t *testing.T) {
	up := startUpstream(t)
	b := bridge(t, newProxy(t, up, ext.Options{}))
	// Run a1's own session works, and is the one the others try to use.
	code, sid, body := post(t, b.URL, "a1", "docs", "", initialize)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("a1 initialize = %d %q %s", code, sid, body)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	tests := []struct {
		name, run, slug, session string
		want                     int
	}{
		{"no run in the context", "no-token", "docs", "", http.StatusUnauthorized},
		{"a server outside the run's profile", "a-other", "docs", "", http.StatusForbidden},
		{"another tenant's server of the same slug", "b1", "docs", "", http.StatusNotFound},
		{"an engine the server is not exposed to", "a-codex", "docs", "", http.StatusForbidden},
		{"run a1's session presented by run a2", "a2", "docs", sid, http.StatusNotFound},
		{"run a1's session presented by tenant B", "b1", "docs", sid, http.StatusNotFound},
		{"a path below a slug", "a1", "docs/x", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := initialize
			if tt.session != "" {
				body = call
			}
			if code, _, got := post(t, b.URL, tt.run, tt.slug, tt.session, body); code != tt.want {
				t.Errorf("status = %d (%s), want %d", code, got, tt.want)
			}
		})
	}
	if n := up.calls.Load(); n != 0 {
		t.Errorf("%d calls reached the server", n)
	}
	// The session still serves its own run.
	if code, _, got := post(t, b.URL, "a1", "docs", sid, call); code != http.StatusOK || !strings.Contains(got, `"text":"x"`) {
		t.Errorf("a1's own call = %d %s", code, got)
	}
}

// TestRemoteServersOnlyAtPublicAddresses: the default client refuses the
// loopback server (an SSRF into the bridge's network), and reaches it once
// the operator allows its host.
func TestRemoteServersOnlyAtPublicAddresses(t *testing.T) {
	up := startUpstream(t)
	for _, tt := range []struct {
		name  string
		allow []string
		ok    bool
	}{{"default", nil, false}, {"allowed host", []string{"127.0.0.1"}, true}} {
		t.Run(tt.name, func(t *testing.T) {
			b := bridge(t, newProxy(t, up, ext.Options{AllowHosts: append([]string{}, tt.allow...)}))
			cs, err := connectAs(t, b.URL, "a1", "docs")
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.ListTools(context.Background(), nil)
			if (err == nil) != tt.ok {
				t.Errorf("list tools = %v, want ok %v", err, tt.ok)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "loopback")) {
				t.Errorf("refusal = %v, want it to say the address is loopback", err)
			}
		})
	}
}

// TestStdioNeedsALauncher: without a sandbox launcher a stdio server is
// refused, never started on the host.
func TestStdioNeedsALauncher(t *testing.T) {
	b := bridge(t, newProxy(t, startUpstream(t), ext.Options{}))
	cs, err := connectAs(t, b.URL, "a1", "local")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "no sandbox") {
		t.Errorf("list tools of a stdio server without a launcher = %v", err)
	}
}

// TestIdleLinksAreClosed: a run's link left idle past IdleTimeout is
// closed when another request comes: its session is gone, and a new one
// reconnects.
func TestIdleLinksAreClosed(t *testing.T) {
	up := startUpstream(t)
	b := bridge(t, newProxy(t, up, ext.Options{IdleTimeout: 200 * time.Millisecond}))
	code, sid, body := post(t, b.URL, "a1", "docs", "", initialize)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize = %d %s", code, body)
	}
	time.Sleep(400 * time.Millisecond)
	if code, _, body := post(t, b.URL, "a2", "docs", "", initialize); code != http.StatusOK {
		t.Fatalf("a2 initialize = %d %s", code, body)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	if code, _, body := post(t, b.URL, "a1", "docs", sid, call); code != http.StatusNotFound {
		t.Errorf("a1's idle session after eviction = %d %s, want 404 (the client initializes again)", code, body)
	}
	cs, err := connectAs(t, b.URL, "a1", "docs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("a1 after reconnecting: %v", err)
	}
}
