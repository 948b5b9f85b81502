package ext_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

func TestProbe(t *testing.T) {
	up := startUpstream(t)
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://auth.example/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(locked.Close)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String()
	_ = l.Close()

	remote := func(url string, headers map[string]string) events.ResolvedMCPServer {
		return events.ResolvedMCPServer{MCPServerDef: events.MCPServerDef{Slug: "s", Transport: events.MCPHTTP, URL: url}, Headers: headers}
	}
	tests := []struct {
		name string
		give events.ResolvedMCPServer
		opts ext.Options
		want ext.State
	}{
		{"a server that answers", remote(up.URL, map[string]string{"Authorization": "Bearer x"}), ext.Options{AllowHosts: []string{"127.0.0.1"}}, ext.StateOK},
		{"a 401 with a challenge", remote(locked.URL, nil), ext.Options{AllowHosts: []string{"127.0.0.1"}}, ext.StateNeedsAuth},
		{"a grant whose refresh was refused", events.ResolvedMCPServer{MCPServerDef: events.MCPServerDef{Slug: "s", Transport: events.MCPHTTP, URL: up.URL},
			NeedsAuth: "needs_auth: invalid_grant"}, ext.Options{AllowHosts: []string{"127.0.0.1"}}, ext.StateNeedsAuth},
		{"a header with no value", remote(up.URL, map[string]string{"Authorization": ""}), ext.Options{AllowHosts: []string{"127.0.0.1"}}, ext.StateNeedsConfig},
		{"an env variable with no value", events.ResolvedMCPServer{MCPServerDef: events.MCPServerDef{Slug: "s", Transport: events.MCPStdio, Command: "x"},
			Env: map[string]string{"TOKEN": ""}}, ext.Options{}, ext.StateNeedsConfig},
		{"nothing listening", remote(closed, nil), ext.Options{AllowHosts: []string{"127.0.0.1"}}, ext.StateUnreachable},
		{"a private address", remote(up.URL, nil), ext.Options{}, ext.StateUnreachable},
		{"a server that fails", remote(broken.URL, nil), ext.Options{AllowHosts: []string{"127.0.0.1"}}, ext.StateError},
		{"a stdio server without a sandbox", events.ResolvedMCPServer{MCPServerDef: events.MCPServerDef{Slug: "s", Transport: events.MCPStdio, Command: "x"}},
			ext.Options{}, ext.StateError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got := ext.Probe(ctx, tt.opts, tenantA, tt.give)
			if got.State != tt.want || (got.State != ext.StateOK && got.Reason == "") {
				t.Errorf("Probe = %+v, want %s with a reason", got, tt.want)
			}
			if tt.want == ext.StateOK && got.Tools != 3 {
				t.Errorf("Probe listed %d tools, want 3", got.Tools)
			}
		})
	}
}
