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

// TestMCPServersREST: who may read and change the tenant's and a project's
// MCP servers, that their secrets never come back (not in a reply, not in
// the audit log), and that another tenant reaches none of them.
func TestMCPServersREST(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.newTenant(t, "acme"), e.newTenant(t, "bolt")
	ctx := context.Background()
	adm, mem, out := a.admin.c, a.member.c, a.outsider.c
	global, project := client.Layer{}, client.Layer{ProjectID: a.project.ID}
	const secret = "Bearer mcp-header-secret"

	docs := api.MCPServerInput{Slug: "docs", Transport: events.MCPHTTP, URL: "https://mcp.example.com/mcp",
		Headers: map[string]string{"Authorization": secret}}
	got, err := adm.CreateMCPServer(ctx, global, docs)
	if err != nil || got.Slug != "docs" || len(got.HeaderNames) != 1 || got.HeaderNames[0] != "Authorization" {
		t.Fatalf("CreateMCPServer = %+v, %v", got, err)
	}
	_, err = adm.CreateMCPServer(ctx, global, docs)
	wantStatus(t, "create the same slug twice", err, http.StatusConflict)
	_, err = mem.CreateMCPServer(ctx, global, api.MCPServerInput{Slug: "m", Transport: events.MCPStdio, Command: "x"})
	wantStatus(t, "a member adds a tenant server", err, http.StatusForbidden)
	if list, err := mem.MCPServers(ctx, global); err != nil || len(list) != 1 {
		t.Errorf("member lists the tenant's servers = %+v, %v", list, err)
	}
	for _, bad := range []struct {
		give api.MCPServerInput
		want string
	}{
		{api.MCPServerInput{Slug: "u", Transport: events.MCPHTTP}, "server.url is required"},
		{api.MCPServerInput{Slug: "u", Transport: events.MCPHTTP, URL: "https://169.254.169.254/"}, "server.url"},
		{api.MCPServerInput{Slug: "u", Transport: events.MCPStdio}, "server.command is required"},
		{api.MCPServerInput{Transport: events.MCPStdio, Command: "x"}, "server.slug is required"},
	} {
		_, err := adm.CreateMCPServer(ctx, global, bad.give)
		wantStatus(t, "create "+bad.want, err, http.StatusBadRequest)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("create = %v, want it to say %q", err, bad.want)
		}
	}

	// A project's servers: its members read them, its owners and admins change them.
	local := api.MCPServerInput{Slug: "local", Transport: events.MCPStdio, Command: "npx", Args: []string{"-y", "srv"},
		Env: map[string]string{"API_KEY": "mcp-env-secret"}}
	_, err = mem.CreateMCPServer(ctx, project, local)
	wantStatus(t, "a plain project member adds a project server", err, http.StatusForbidden)
	if _, err = adm.CreateMCPServer(ctx, project, local); err != nil {
		t.Fatal(err)
	}
	if list, err := mem.MCPServers(ctx, project); err != nil || len(list) != 1 || list[0].EnvNames[0] != "API_KEY" {
		t.Errorf("member lists the project's servers = %+v, %v", list, err)
	}
	_, err = out.MCPServers(ctx, project)
	wantStatus(t, "a user outside the project lists its servers", err, http.StatusNotFound)

	// Replacing without headers keeps them; {} clears them.
	upd := docs
	upd.Slug, upd.Headers, upd.Name = "", nil, "Docs"
	if got, err = adm.ReplaceMCPServer(ctx, global, "docs", upd); err != nil || got.Name != "Docs" || len(got.HeaderNames) != 1 {
		t.Errorf("replace without headers = %+v, %v; want them kept", got, err)
	}
	upd.Headers = map[string]string{}
	if got, err = adm.ReplaceMCPServer(ctx, global, "docs", upd); err != nil || len(got.HeaderNames) != 0 {
		t.Errorf("replace with {} headers = %+v, %v; want them cleared", got, err)
	}
	upd.Headers = map[string]string{"Authorization": secret}
	if _, err = adm.ReplaceMCPServer(ctx, global, "docs", upd); err != nil {
		t.Fatal(err)
	}

	// Another tenant sees none of them, by slug or by A's project.
	bc := b.admin.c
	if list, err := bc.MCPServers(ctx, global); err != nil || len(list) != 0 {
		t.Errorf("tenant B's list = %+v, %v", list, err)
	}
	_, err = bc.MCPServer(ctx, global, "docs")
	wantStatus(t, "tenant B reads A's server", err, http.StatusNotFound)
	err = bc.DeleteMCPServer(ctx, global, "docs")
	wantStatus(t, "tenant B deletes A's server", err, http.StatusNotFound)
	_, err = bc.MCPServers(ctx, project)
	wantStatus(t, "tenant B lists A's project's servers", err, http.StatusNotFound)
	_, err = bc.CreateMCPServer(ctx, project, local)
	wantStatus(t, "tenant B adds a server to A's project", err, http.StatusNotFound)

	// No secret in anything read back, the audit log included.
	var seen []string
	for _, l := range []client.Layer{global, project} {
		list, _ := adm.MCPServers(ctx, l)
		raw, _ := json.Marshal(list)
		seen = append(seen, string(raw))
	}
	audit := e.artifactsAudit(t, "mcp_server")
	if !strings.Contains(audit, "mcp_server.put") || !strings.Contains(audit, "API_KEY") {
		t.Errorf("audit log = %s; want the puts, with the names of the secrets", audit)
	}
	wantNoSecret(t, append(seen, audit)...)
	// The probe: only who may change a server may have it probed (its
	// secrets go out); with no bridge serving, the route says so.
	_, err = mem.ProbeMCPServer(ctx, global, "docs")
	wantStatus(t, "a member probes a tenant server", err, http.StatusForbidden)
	_, err = bc.ProbeMCPServer(ctx, project, "local")
	wantStatus(t, "tenant B probes A's project's server", err, http.StatusNotFound)
	_, err = adm.ProbeMCPServer(ctx, global, "docs")
	wantStatus(t, "a probe with no bridge running", err, http.StatusServiceUnavailable)
	// Signing in takes the same right, and a public URL for its callback.
	_, err = mem.StartMCPOAuth(ctx, global, "docs", api.MCPOAuthStart{})
	wantStatus(t, "a member starts a sign-in to a tenant server", err, http.StatusForbidden)
	_, err = bc.StartMCPOAuth(ctx, global, "docs", api.MCPOAuthStart{})
	wantStatus(t, "tenant B starts a sign-in to A's server", err, http.StatusNotFound)
	_, err = adm.StartMCPOAuth(ctx, global, "docs", api.MCPOAuthStart{})
	wantStatus(t, "a sign-in without CLOPEN_PUBLIC_URL", err, http.StatusConflict)
	if err == nil || !strings.Contains(err.Error(), "CLOPEN_PUBLIC_URL") {
		t.Errorf("sign-in without a public URL = %v, want it to name CLOPEN_PUBLIC_URL", err)
	}
	_, err = mem.StartMCPOAuth(ctx, project, "local", api.MCPOAuthStart{})
	wantStatus(t, "a plain member starts a sign-in to a project server", err, http.StatusForbidden)
	_, err = adm.StartMCPOAuth(ctx, project, "local", api.MCPOAuthStart{})
	wantStatus(t, "a sign-in to a stdio server", err, http.StatusBadRequest)
	// A callback whose state is not Clopen's is a page saying so, with no key.
	resp, err := http.Get(e.url + "/v1/mcp-oauth/callback?code=c&state=forged")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("callback with a forged state = %d %s, want a 400 page", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	if err := adm.DeleteMCPServer(ctx, project, "local"); err != nil {
		t.Fatal(err)
	}
	_, err = adm.MCPServer(ctx, project, "local")
	wantStatus(t, "a deleted server", err, http.StatusNotFound)
}

// artifactsAudit is the artifacts' audit log of a target type as text:
// each entry's action, before and after.
func (e *env) artifactsAudit(t *testing.T, targetType string) string {
	t.Helper()
	var audit string
	if err := e.db.QueryRow(context.Background(), `SELECT coalesce(string_agg(action || ' ' || coalesce(before::text, '') ||
		coalesce(after::text, ''), ' '), '') FROM artifacts.audit_log WHERE target_type = $1`, targetType).Scan(&audit); err != nil {
		t.Fatal(err)
	}
	return audit
}

// wantNoSecret fails for each text that holds "secret", which every
// secret of the tests does.
func wantNoSecret(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, "secret") {
			t.Errorf("a secret came back: %s", s)
		}
	}
}
