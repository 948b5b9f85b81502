package ext_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// grants resolves one remote server whose OAuth token the test rotates,
// as the artifacts service does when it refreshes a grant; it counts the
// resolves.
type grants struct {
	mu       sync.Mutex
	server   events.ResolvedMCPServer
	resolves atomic.Int32
}

func (g *grants) Server(context.Context, string, string, string) (events.ResolvedMCPServer, error) {
	g.resolves.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.server, nil
}

func (g *grants) set(token string, expires time.Time, needsAuth string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.server.Headers = map[string]string{"Authorization": "Bearer " + token}
	g.server.Expires, g.server.NeedsAuth = expires, needsAuth
}

// TestATokenThatExpiresDuringARunIsRenewed: a run's link to a remote
// server resolves the server again when its OAuth token is about to
// expire (here a short one, halfway through its life), and calls on with
// the refreshed token; the upstream, which
// takes only the current token, never sees the old one after it was
// replaced. A grant that can no longer be refreshed ends the calls with
// the sign-in message.
func TestATokenThatExpiresDuringARunIsRenewed(t *testing.T) {
	up := startUpstream(t)
	var valid atomic.Value
	valid.Store("Bearer tok-1")
	guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A session's close (DELETE) is let through with any token: a
		// server ends its sessions on its own anyway, and the test's must
		// end before the leak check.
		if r.Method != http.MethodDelete && r.Header.Get("Authorization") != valid.Load() {
			http.Error(w, "expired token", http.StatusUnauthorized)
			return
		}
		up.Config.Handler.ServeHTTP(w, r)
	})
	front := httptest.NewServer(guarded)
	t.Cleanup(front.Close)
	g := &grants{server: events.ResolvedMCPServer{MCPServerDef: events.MCPServerDef{ID: "srv-1", Slug: "docs",
		Transport: events.MCPHTTP, URL: front.URL}}}
	// A short token: the link renews it halfway through its life, and
	// uses it as it is before that.
	g.set("tok-1", time.Now().Add(2*time.Second), "")
	h := ext.New(g, ext.Options{HTTPClient: &http.Client{}})
	t.Cleanup(func() { _ = h.Close() })
	b := bridge(t, h)
	cs, err := connectAs(t, b.URL, "a2", "docs")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	echo := func() (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	}
	if res, err := echo(); err != nil || res.IsError {
		t.Fatalf("call with the first token: %+v, %v", res, err)
	}
	if n := g.resolves.Load(); n != 1 {
		t.Fatalf("%d resolves before the token nears its expiry, want 1", n)
	}
	// The token is now in the second half of its life; the authorization
	// server has rotated it, and the upstream takes only the new one.
	time.Sleep(1200 * time.Millisecond)
	g.set("tok-2", time.Now().Add(time.Hour), "")
	valid.Store("Bearer tok-2")
	for i := range 2 {
		if res, err := echo(); err != nil || res.IsError {
			t.Fatalf("call %d after the token was rotated: %+v, %v", i, res, err)
		}
	}
	if got := up.auth.Load(); got != "Bearer tok-2" {
		t.Errorf("the upstream last saw %q, want the renewed token", got)
	}
	if n := g.resolves.Load(); n != 2 {
		t.Errorf("%d resolves, want 2: one renewal, then the new token until it nears its own expiry", n)
	}

	// A refresh refused for good: the artifacts service answers the next
	// resolve with the grant marked, and the call is told to sign in again.
	g.set("tok-3", time.Now().Add(time.Second), "")
	valid.Store("Bearer tok-3")
	other, err := connectAs(t, b.URL, "a1", "docs") // a link of its own, on tok-3
	if err != nil {
		t.Fatal(err)
	}
	g.set("", time.Time{}, "invalid_grant: the refresh token was revoked")
	time.Sleep(700 * time.Millisecond)
	calls := up.calls.Load()
	res, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil && !res.IsError || err != nil && !strings.Contains(err.Error(), "signed in to again") {
		t.Errorf("call after the refresh was refused: %+v, %v; want the sign-in error", res, err)
	}
	if err == nil && res.IsError && !strings.Contains(text(res), "signed in to again") {
		t.Errorf("call after the refresh was refused says %q, want the sign-in error", text(res))
	}
	if up.calls.Load() != calls {
		t.Error("the upstream was called with a grant that no longer works")
	}
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
