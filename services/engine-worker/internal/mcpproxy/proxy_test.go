package mcpproxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/platform/bustoken"
)

// upstream stands for the bridge: it records what reaches it.
type upstream struct {
	paths    []string
	tokens   []string
	dispatch []string
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.paths = append(u.paths, r.URL.Path)
	u.tokens = append(u.tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	u.dispatch = append(u.dispatch, r.Header.Get(bustoken.DispatchHeader))
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
}

// TestProxy: a registered run's requests reach the bridge's /mcp with a
// fresh mcp token of that run in place of whatever the agent sent; the
// session's URL is the same for its next run; an unknown key, a path
// outside /mcp and a run that ended are refused without reaching the
// bridge.
func TestProxy(t *testing.T) {
	up := &upstream{}
	bridge := httptest.NewServer(up)
	defer bridge.Close()
	keys := bustoken.Generate()
	signer, _ := keys.MCPSigner()
	p, err := ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Configure(bridge.URL, signer); err != nil {
		t.Fatal(err)
	}
	run1 := bustoken.Claims{TenantID: "t1", ProjectID: "p1", SessionID: "s1", RunID: "r1", Engine: "pi"}
	url1, remove1 := p.Register(run1, "dispatch-of-r1")
	post := func(url, auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		req.Header.Set(bustoken.DispatchHeader, "the-agents-guess")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(url1, "Bearer the-agents-own"); code != http.StatusOK {
		t.Fatalf("registered run: %d %s", code, body)
	}
	if len(up.paths) != 1 || up.paths[0] != "/mcp" || up.dispatch[0] != "" {
		t.Fatalf("the bridge saw %v with dispatch tokens %q, want /mcp with none", up.paths, up.dispatch)
	}
	// An external server's path carries the run's dispatch token, never
	// the one the agent sent.
	if code, body := post(url1+"/ext/docs", ""); code != http.StatusOK {
		t.Fatalf("external server: %d %s", code, body)
	}
	if len(up.paths) != 2 || up.paths[1] != "/mcp/ext/docs" || up.dispatch[1] != "dispatch-of-r1" {
		t.Fatalf("the bridge saw %v with dispatch tokens %q, want /mcp/ext/docs with the run's", up.paths, up.dispatch)
	}
	c, err := keys.Verifier().Verify(up.tokens[0], bustoken.MCP)
	if err != nil || c.RunID != "r1" || c.TenantID != "t1" || c.ProjectID != "p1" || c.SessionID != "s1" {
		t.Fatalf("the bridge got token claims %+v (%v), want run r1's", c, err)
	}

	base := strings.TrimSuffix(url1, "/mcp")
	refused := []string{
		strings.Replace(url1, "/run/", "/run/0", 1), // another key
		base + "/other",
		base + "/mcp/../../admin",
		base + "/mcp/other",
		base + "/mcp/ext/",
		base + "/mcp/ext/docs/more",
		base + "/mcp/ext/../../mcp",
		strings.TrimSuffix(base, base[strings.LastIndex(base, "/"):]) + "/mcp",
	}
	url2, remove2 := p.Register(bustoken.Claims{TenantID: "t1", ProjectID: "p1", SessionID: "s2", RunID: "r2"}, "")
	defer remove2()
	if url2 == url1 {
		t.Error("two sessions got the same URL")
	}
	remove1()
	refused = append(refused, url1) // the run ended
	for _, u := range refused {
		code, body := post(u, "")
		var e struct {
			Error struct{ Code int } `json:"error"`
		}
		if code != http.StatusUnauthorized || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != -32001 {
			t.Errorf("%s: %d %s, want 401 and a JSON-RPC error", u, code, body)
		}
	}
	if len(up.paths) != 2 {
		t.Errorf("refused requests reached the bridge: %v", up.paths)
	}

	// The session's next run has the same URL, and its own token.
	again, remove3 := p.Register(bustoken.Claims{TenantID: "t1", ProjectID: "p1", SessionID: "s1", RunID: "r3"}, "")
	defer remove3()
	if again != url1 {
		t.Errorf("the session's next run got %s, want %s", again, url1)
	}
	remove1() // the earlier run's late removal leaves the new run alone
	if code, _ := post(again, ""); code != http.StatusOK {
		t.Fatalf("next run: %d", code)
	}
	if c, err := keys.Verifier().Verify(up.tokens[2], bustoken.MCP); err != nil || c.RunID != "r3" {
		t.Errorf("the next run's request carried %+v (%v), want run r3's", c, err)
	}
}

// TestTools: the worker lists a run's server's tools through the bridge
// with the tokens the agent's requests get (a fresh mcp token of the run,
// and its dispatch token for an external server), and only while the run
// is registered.
func TestTools(t *testing.T) {
	keys := bustoken.Generate()
	signer, _ := keys.MCPSigner()
	var seen struct {
		sync.Mutex
		paths, dispatch []string
		runs            []string
	}
	server := func(names ...string) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "bridge", Version: "1"}, nil)
		for _, n := range names {
			s.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
		return s
	}
	own, docs := server("ask_user", "notify"), server("search", "fetch")
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.URL.Path == "/mcp/ext/docs" {
			return docs
		}
		return own
	}, nil)
	bridge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := keys.Verifier().Verify(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), bustoken.MCP)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		seen.Lock()
		seen.paths = append(seen.paths, r.URL.Path)
		seen.dispatch = append(seen.dispatch, r.Header.Get(bustoken.DispatchHeader))
		seen.runs = append(seen.runs, c.RunID)
		seen.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer bridge.Close()
	p, err := ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Configure(bridge.URL, signer); err != nil {
		t.Fatal(err)
	}
	url, remove := p.Register(bustoken.Claims{TenantID: "t1", SessionID: "s1", RunID: "r1", Servers: []string{"docs"}}, "dispatch-of-r1")
	ctx := context.Background()
	got, err := p.Tools(ctx, url, "docs")
	if err != nil || strings.Join(got, ",") != "search,fetch" && strings.Join(got, ",") != "fetch,search" {
		t.Fatalf("docs lists %v (%v), want search and fetch", got, err)
	}
	if got, err := p.Tools(ctx, url, ""); err != nil || len(got) != 2 {
		t.Fatalf("Clopen's own server lists %v (%v), want its two tools", got, err)
	}
	seen.Lock()
	for i, path := range seen.paths {
		wantDispatch := ""
		if path == "/mcp/ext/docs" {
			wantDispatch = "dispatch-of-r1"
		}
		if seen.runs[i] != "r1" || seen.dispatch[i] != wantDispatch {
			t.Errorf("request %d to %s: run %q, dispatch %q; want r1 and %q", i, path, seen.runs[i], seen.dispatch[i], wantDispatch)
		}
	}
	n := len(seen.paths)
	seen.Unlock()
	if n == 0 {
		t.Fatal("the bridge saw no request")
	}
	if _, err := p.Tools(ctx, url, "../docs"); err == nil {
		t.Error("a slug with a path in it was listed")
	}
	remove()
	if _, err := p.Tools(ctx, url, "docs"); err == nil {
		t.Error("a run that ended still listed its server's tools")
	}
	seen.Lock()
	defer seen.Unlock()
	if len(seen.paths) != n {
		t.Errorf("the bridge saw %d requests after the run ended", len(seen.paths)-n)
	}
}
