package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// TestIntegrationsREST: admins connect, change and disconnect accounts and
// members read them; an account bound to a project is hidden from users
// outside it; the MCP server an account projects shows whose it is and is
// refused to direct changes; credentials never come back; bad input is a
// 400 naming the field.
func TestIntegrationsREST(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	adm, mem, out := a.admin.c, a.member.c, a.outsider.c
	const secret = "ghp_rest-integration-secret"

	provs, err := mem.IntegrationProviders(ctx)
	if err != nil || len(provs) < 2 || provs[0].ID != "github" || provs[0].Server.URL != "https://api.githubcopilot.com/mcp/" {
		t.Fatalf("providers = %+v, %v", provs, err)
	}
	gh := api.IntegrationInput{Provider: "github", Label: "work", Capabilities: []string{events.CapabilityAgentTools}, Credential: secret}
	_, err = mem.ConnectIntegration(ctx, gh)
	wantStatus(t, "a member connects", err, http.StatusForbidden)
	in, err := adm.ConnectIntegration(ctx, gh)
	if err != nil || in.Projection == nil || in.Projection.Slug != "github" || !in.HasCredential {
		t.Fatalf("connect = %+v, %v", in, err)
	}
	_, err = adm.ConnectIntegration(ctx, gh)
	wantStatus(t, "the same label twice", err, http.StatusConflict)

	servers, err := mem.MCPServers(ctx, client.Layer{})
	if err != nil || len(servers) != 1 || servers[0].ManagedBy != "integration:"+in.ID || servers[0].HeaderNames[0] != "Authorization" {
		t.Errorf("the tenant's MCP servers = %+v, %v; want github, managed by %s", servers, err, in.ID)
	}
	_, err = adm.ReplaceMCPServer(ctx, client.Layer{}, "github", api.MCPServerInput{Transport: events.MCPHTTP, URL: "https://evil.example.com/mcp"})
	wantStatus(t, "replace the projected server", err, http.StatusConflict)
	if err == nil || !strings.Contains(err.Error(), in.ID) {
		t.Errorf("replace = %v; want it to name integration %s", err, in.ID)
	}
	err = adm.DeleteMCPServer(ctx, client.Layer{}, "github")
	wantStatus(t, "delete the projected server", err, http.StatusConflict)

	// A project's account: its members see it, others do not.
	vendor, err := adm.ConnectIntegration(ctx, api.IntegrationInput{ProjectID: a.project.ID, Provider: "custom", Label: "vendor",
		Capabilities: []string{events.CapabilityAgentTools}, Credential: "vendor-secret",
		Server: events.IntegrationServer{Slug: "vendor", URL: "https://vendor.example.com/mcp", HeaderName: "X-Api-Key"}})
	if err != nil {
		t.Fatal(err)
	}
	if list, err := mem.Integrations(ctx); err != nil || len(list) != 2 {
		t.Errorf("a project member lists %+v, %v; want both", list, err)
	}
	if list, err := out.Integrations(ctx); err != nil || len(list) != 1 || list[0].ID != in.ID {
		t.Errorf("a user outside the project lists %+v, %v; want the tenant's only", list, err)
	}
	_, err = out.Integration(ctx, vendor.ID)
	wantStatus(t, "a user outside the project reads its account", err, http.StatusNotFound)
	if s, err := mem.MCPServer(ctx, client.Layer{ProjectID: a.project.ID}, "vendor"); err != nil || s.ManagedBy != "integration:"+vendor.ID {
		t.Errorf("the project's vendor server = %+v, %v", s, err)
	}

	// A change keeps what it leaves out; the server follows.
	label := "office"
	_, err = mem.UpdateIntegration(ctx, in.ID, api.IntegrationPatch{Label: &label})
	wantStatus(t, "a member changes an account", err, http.StatusForbidden)
	if in, err = adm.UpdateIntegration(ctx, in.ID, api.IntegrationPatch{Label: &label, Credential: ptr("ghp_second-secret")}); err != nil ||
		in.Label != "office" || in.Projection == nil {
		t.Errorf("update = %+v, %v", in, err)
	}
	if s, err := adm.MCPServer(ctx, client.Layer{}, "github"); err != nil || s.Name != "GitHub: office" {
		t.Errorf("the projected server after the update = %+v, %v", s, err)
	}

	// A check needs the bridge, which this gateway has not; only admins check.
	_, err = mem.CheckIntegration(ctx, in.ID)
	wantStatus(t, "a member checks an account", err, http.StatusForbidden)
	_, err = adm.CheckIntegration(ctx, in.ID)
	wantStatus(t, "a check with no bridge running", err, http.StatusServiceUnavailable)

	// Bad input names the field and stores nothing.
	for _, tt := range []struct{ give, want string }{
		{`{"provider":"github","label":"a\u0000b","credential":"k"}`, "label: a string may not contain the NUL character"},
		{`{"provider":"github","label":"x","credential":"k\u0000"}`, "credential: a string may not contain the NUL character"},
		{`{"provider":"github","label":"` + strings.Repeat("x", 300) + `","credential":"k"}`, "integration.label: at most 200"},
		{`{"provider":"github","label":"x","credential":"` + strings.Repeat("k", 9000) + `"}`, "credential: no line break or NUL byte, at most 8192"},
		{`{"provider":"gitlab","label":"x","credential":"k"}`, `integration.provider "gitlab"`},
		{`{"provider":"github","label":"x","credential":"k","capabilities":["source"]}`, `integration.capabilities[0] "source"`},
		{`{"provider":"custom","label":"x","credential":"k","server":{"slug":"c","url":"https://169.254.169.254/","headerName":"X-Key"}}`,
			"integration.server.url"},
		{`{"provider":"github","label":"x","credential":"k","extra":1}`, `unknown field "extra"`},
	} {
		status, _, body := rawDo(t, "POST", e.url+"/v1/integrations", a.admin.key, []byte(tt.give))
		if status != http.StatusBadRequest || !strings.Contains(body.Error.Message, tt.want) {
			t.Errorf("POST %.80s = %d %+v, want 400 naming %q", tt.give, status, body.Error, tt.want)
		}
	}
	if list, err := adm.Integrations(ctx); err != nil || len(list) != 2 {
		t.Errorf("after the refusals, integrations = %+v, %v", list, err)
	}

	// No credential in anything read back, the audit log included.
	list, _ := adm.Integrations(ctx)
	raw, _ := json.Marshal(list)
	audit := e.artifactsAudit(t, "integration")
	if !strings.Contains(audit, "integration.connect") || !strings.Contains(audit, "integration.update") {
		t.Errorf("audit log = %s; want the connects and the update", audit)
	}
	wantNoSecret(t, string(raw), audit)

	// Disconnecting lets the servers go.
	for _, id := range []string{in.ID, vendor.ID} {
		if err := adm.DisconnectIntegration(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := adm.MCPServers(ctx, client.Layer{}); err != nil || len(s) != 0 {
		t.Errorf("after disconnecting, the tenant's servers = %+v, %v", s, err)
	}
	_, err = adm.Integration(ctx, in.ID)
	wantStatus(t, "a disconnected account", err, http.StatusNotFound)
}
