package mcpproxy

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"clopen.dev/pkg/platform/bustoken"
)

// forwardedPath is every path the proxy may forward to: the bridge's /mcp
// and one external server's /mcp/ext/<slug>.
var forwardedPath = regexp.MustCompile(`^/mcp(/ext/[^/]+)?$`)

// FuzzProxyPath: whatever path an agent asks for under its run's URL, the
// proxy forwards only to /mcp or /mcp/ext/<slug>, with the run's dispatch
// token on (and only on) an external server's path; anything else is
// refused without reaching the bridge.
func FuzzProxyPath(f *testing.F) {
	for _, s := range []string{"mcp", "mcp/ext/docs", "mcp/ext/", "mcp/ext/a/b", "mcp/../x", "mcp/ext/..", "mcp//ext/x",
		"mcp/ext/%2e%2e", "other", "", "mcp/ext/docs/", "./mcp", "mcp/./ext/x"} {
		f.Add(s)
	}
	var mu sync.Mutex
	var seen []string
	var dispatch []string
	bridge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		dispatch = append(dispatch, r.Header.Get(bustoken.DispatchHeader))
		mu.Unlock()
	}))
	defer bridge.Close()
	signer, _ := bustoken.Generate().MCPSigner()
	p := &Proxy{port: Port, secret: newSecret()}
	if err := p.Configure(bridge.URL, signer); err != nil {
		f.Fatal(err)
	}
	runURL, _ := p.Register(bustoken.Claims{TenantID: "t1", ProjectID: "p1", SessionID: "s1", RunID: "r1"}, "dispatch-r1")
	base := runURL[strings.Index(runURL, "/run/"):strings.LastIndex(runURL, "/mcp")]

	f.Fuzz(func(t *testing.T, sub string) {
		mu.Lock()
		seen, dispatch = nil, nil
		mu.Unlock()
		req := httptest.NewRequest(http.MethodPost, "http://proxy/", strings.NewReader("{}"))
		req.URL.Path = base + "/" + sub
		req.Header.Set(bustoken.DispatchHeader, "the-agents-guess")
		w := httptest.NewRecorder()
		p.ServeHTTP(w, req)
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%q: status %d without reaching the bridge, want 401", sub, w.Code)
			}
			return
		}
		path := seen[0]
		if !forwardedPath.MatchString(path) {
			t.Fatalf("%q was forwarded to %q", sub, path)
		}
		external := strings.HasPrefix(path, "/mcp/ext/")
		if external && dispatch[0] != "dispatch-r1" || !external && dispatch[0] != "" {
			t.Fatalf("%q forwarded to %q with dispatch token %q", sub, path, dispatch[0])
		}
	})
}
