package stack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/egress"
	"clopen.dev/pkg/platform/mcpoauth/authserver"
	"clopen.dev/services/artifacts"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// TestMCPOAuth: a remote MCP server behind a local OAuth authorization
// server, signed in to through the gateway's REST and its callback, then
// reached by a run through the bridge with the bearer; the callback cannot
// be replayed or carried to another tenant, every resolve refreshes the
// short-lived token and seals the rotated one, and a refused refresh
// leaves the server needs_auth, which the run is told. No grant comes back
// in any read.
func TestMCPOAuth(t *testing.T) {
	as := authserver.NewAuthServer(t, "")
	// Tokens live a minute, under the two-minute refresh margin: every
	// resolve refreshes, and each refresh rotates the refresh token.
	as.TTL = time.Minute
	m := authserver.NewMCPServer(t, as, echoHandler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, Config{HTTP: ln, Artifacts: artifacts.Config{PublicURL: "http://" + ln.Addr().String(),
		Egress: egress.Policy{Allow: []string{"127.0.0.1"}}}})
	ctx := context.Background()
	a, b := h.account("oauth-a"), h.account("oauth-b")
	const slug = "guarded"
	for _, acc := range []account{a, b} {
		if _, err := acc.c.CreateMCPServer(ctx, client.Layer{}, api.MCPServerInput{Slug: slug, Transport: events.MCPHTTP, URL: m.URL()}); err != nil {
			t.Fatalf("create server: %v", err)
		}
	}
	if st, err := a.c.ProbeMCPServer(ctx, client.Layer{}, slug); err != nil || st.State != "needs_auth" {
		t.Fatalf("probe before signing in = %+v, %v; want needs_auth", st, err)
	}

	// Tenant B's state, rewritten to name tenant A, is refused, and its
	// sign-in is not spent by the attempt.
	bBack := authorize(t, b.c, slug)
	forged := withStateTenant(t, bBack, mustMe(t, a.c).Tenant.ID)
	if code, body := getPage(t, forged); code != http.StatusBadRequest || !strings.Contains(body, "signature") {
		t.Errorf("callback with a state rewritten to another tenant = %d %s, want 400 bad signature", code, body)
	}
	if code, body := getPage(t, bBack); code != http.StatusOK {
		t.Errorf("tenant B's own callback = %d %s, want 200", code, body)
	}

	aBack := authorize(t, a.c, slug)
	if code, body := getPage(t, aBack); code != http.StatusOK || !strings.Contains(body, "Signed in") {
		t.Fatalf("callback = %d %s, want 200 Signed in", code, body)
	}
	if code, body := getPage(t, aBack); code != http.StatusBadRequest || !strings.Contains(body, "already used") {
		t.Errorf("replayed callback = %d %s, want 400 already used", code, body)
	}

	if st, err := a.c.ProbeMCPServer(ctx, client.Layer{}, slug); err != nil || st.State != "ok" || st.Tools != 1 {
		t.Fatalf("probe after signing in = %+v, %v; want ok with 1 tool", st, err)
	}
	// A run's call through the bridge carries the bearer: the server lets
	// nothing else through. Its resolve refreshed again with the refresh
	// token the probe's refresh rotated in, so that one was sealed.
	refreshed := as.Refreshes()
	me := mustMe(t, a.c)
	tn := tenant{Caller: events.Caller{TenantID: me.Tenant.ID, UserID: me.User.ID, Role: "admin"}, project: a.project.ID}
	res, err := callEcho(t, h, tn, slug)
	if err != nil || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "echoed: hi" {
		t.Fatalf("echo through the bridge = %+v, %v", res, err)
	}
	if got := as.Refreshes(); got != refreshed+1 {
		t.Errorf("the run's resolve made %d refreshes, want 1 with the rotated refresh token", got-refreshed)
	}

	// No read returns the grant, and the row holds none in clear.
	var reads []string
	for _, l := range []client.Layer{{}, {ProjectID: a.project.ID}} {
		list, _ := a.c.MCPServers(ctx, l)
		raw, _ := json.Marshal(list)
		reads = append(reads, string(raw))
	}
	one, _ := a.c.MCPServer(ctx, client.Layer{}, slug)
	raw, _ := json.Marshal(one)
	var row string
	if err := h.st.DB.QueryRow(ctx, `SELECT credential FROM artifacts.mcp_servers WHERE slug = $1 LIMIT 1`, slug).Scan(&row); err != nil {
		t.Fatal(err)
	}
	for _, s := range append(reads, string(raw), row) {
		if strings.Contains(s, "at-") || strings.Contains(s, "rt-") || strings.Contains(s, "token") {
			t.Errorf("a grant came back or lies in clear: %s", s)
		}
	}

	// The authorization server forgets the refresh tokens: the next
	// resolve cannot refresh, so the server needs signing in again, which
	// the probe reports and a run's call is told (not a 401 to retry).
	as.RevokeRefresh()
	if st, err := a.c.ProbeMCPServer(ctx, client.Layer{}, slug); err != nil || st.State != "needs_auth" || !strings.Contains(st.Reason, "invalid_grant") {
		t.Errorf("probe after a refused refresh = %+v, %v; want needs_auth naming invalid_grant", st, err)
	}
	if _, err := callEcho(t, h, tn, slug); err == nil || !strings.Contains(err.Error(), "signed in to again") {
		t.Errorf("a run's call after a refused refresh: %v, want the sign-in warning", err)
	}
}

// echoHandler is an MCP server (Streamable HTTP) with one tool, echo.
func echoHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed: " + in.Text}}}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// authorize starts a sign-in over REST and plays the user at the
// authorization server, which consents at once; it returns the callback
// URL the browser is sent to, not yet followed.
func authorize(t *testing.T, c *client.Client, slug string) *url.URL {
	t.Helper()
	started, err := c.StartMCPOAuth(context.Background(), client.Layer{}, slug, api.MCPOAuthStart{})
	if err != nil {
		t.Fatalf("start sign-in: %v", err)
	}
	back := authserver.Consent(t, started.AuthorizationURL)
	if !strings.HasSuffix(back.Path, "/v1/mcp-oauth/callback") {
		t.Fatalf("authorization redirected to %s, want the callback", back)
	}
	return back
}

// getPage follows a callback URL as the browser does, with no API key.
func getPage(t *testing.T, u *url.URL) (int, string) {
	t.Helper()
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// withStateTenant is u with its state's tenant claim rewritten, the
// signature kept.
func withStateTenant(t *testing.T, u *url.URL, tenantID string) *url.URL {
	t.Helper()
	q := u.Query()
	payload, sig, _ := strings.Cut(q.Get("state"), ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	var claims map[string]any
	if err != nil || json.Unmarshal(raw, &claims) != nil {
		t.Fatalf("state %q is not the payload.signature the callback signs", q.Get("state"))
	}
	claims["t"] = tenantID
	raw, _ = json.Marshal(claims)
	q.Set("state", base64.RawURLEncoding.EncodeToString(raw)+"."+sig)
	out := *u
	out.RawQuery = q.Encode()
	return &out
}

func mustMe(t *testing.T, c *client.Client) api.Me {
	t.Helper()
	me, err := c.Me(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return me
}

// callEcho calls slug's echo tool through the bridge as a live run of tn
// whose profile names slug would.
func callEcho(t *testing.T, h *harness, tn tenant, slug string) (*mcp.CallToolResult, error) {
	t.Helper()
	sess, run, _, _ := h.parkOnQuestion(tn)
	claims := bustoken.Claims{TenantID: tn.TenantID, ProjectID: tn.project, SessionID: sess.ID, RunID: run.RunID,
		Engine: string(events.EngineScripted), Servers: []string{slug}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.st.MCPURL + "/mcp/ext/" + slug, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: runTokens{mcp: bustokentest.Sign(t, h.st.Keys, bustoken.MCP, claims),
			dispatch: bustokentest.Sign(t, h.st.Keys, bustoken.Dispatch, claims)}}}, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
}
