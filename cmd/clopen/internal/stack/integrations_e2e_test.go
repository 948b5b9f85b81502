package stack

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/egress"
	"clopen.dev/services/artifacts"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// TestIntegrationServerThroughTheBridge: the MCP server an integration
// account projects is reached by the bridge with the account's key in its
// sealed header (the gateway's probe, resolved as a run resolves it), and
// a check records the account ok; a new key reaches it the same way, and
// once the account is disconnected the server is gone.
func TestIntegrationServerThroughTheBridge(t *testing.T) {
	echo := startEchoServer(t)
	h := start(t, Config{Dir: t.TempDir(), Artifacts: artifacts.Config{Egress: egress.Policy{Allow: []string{"127.0.0.1"}}}})
	ctx := context.Background()
	a := h.account("integ")
	in, err := a.c.ConnectIntegration(ctx, api.IntegrationInput{Provider: "custom", Label: "echo",
		Capabilities: []string{events.CapabilityAgentTools}, Credential: "Bearer integration-key-1",
		Server: events.IntegrationServer{Slug: "echoes", URL: echo.URL + "/mcp", HeaderName: "Authorization"}})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	probe := func(want string) {
		t.Helper()
		st, err := a.c.ProbeMCPServer(ctx, client.Layer{}, "echoes")
		if err != nil || st.State != "ok" || st.Tools != 1 {
			t.Fatalf("probe = %+v, %v; want ok with 1 tool", st, err)
		}
		if got := echo.auth.Load(); got != want {
			t.Errorf("the server saw Authorization %q, want %q", got, want)
		}
	}
	probe("Bearer integration-key-1")
	if got, err := a.c.CheckIntegration(ctx, in.ID); err != nil || got.Status != events.IntegrationOK {
		t.Errorf("check = %+v, %v; want ok", got, err)
	}
	key := "Bearer integration-key-2"
	if got, err := a.c.UpdateIntegration(ctx, in.ID, api.IntegrationPatch{Credential: &key}); err != nil || got.Status != events.IntegrationUnknown {
		t.Fatalf("update = %+v, %v; want its status unknown until checked again", got, err)
	}
	probe("Bearer integration-key-2")
	if err := a.c.DisconnectIntegration(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	_, err = a.c.ProbeMCPServer(ctx, client.Layer{}, "echoes")
	var ae *events.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("probe after disconnecting = %v, want 404", err)
	}
}
